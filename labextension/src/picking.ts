/**
 * Which experiments of the panel are picked, as JupyterLab's file browser picks files: a click picks one alone,
 * Ctrl-click (Cmd-click on a Mac) or the row's checkbox adds or removes one, Shift-click adds every row from the
 * last one clicked (the anchor) to this one. Held by id, so a picking survives the listing's refreshes; an
 * experiment no longer listed drops out of it.
 */

/** How a row was clicked. */
export interface IHow {
  toggle?: boolean; // Ctrl or Cmd held, or the row's checkbox
  range?: boolean; // Shift held
}

export interface IPicking {
  picked: string[]; // in the listing's order (newest first)
  anchor: string | null; // where the next Shift-click's range starts
}

export const NOTHING_PICKED: IPicking = { picked: [], anchor: null };

/** The ids of ``keep`` in the order of ``listed``. */
function inOrder(listed: string[], keep: Set<string>): string[] {
  return listed.filter(id => keep.has(id));
}

/** What is picked after a click on ``clicked`` (one of ``listed``, the ids in the panel's order). */
export function pick(
  state: IPicking,
  listed: string[],
  clicked: string,
  how: IHow = {}
): IPicking {
  const picked = new Set(state.picked);
  if (how.range) {
    const from = state.anchor === null ? -1 : listed.indexOf(state.anchor);
    const to = listed.indexOf(clicked);
    const [low, high] =
      from < 0 ? [to, to] : [Math.min(from, to), Math.max(from, to)];
    listed.slice(low, high + 1).forEach(id => picked.add(id));
    return { picked: inOrder(listed, picked), anchor: state.anchor ?? clicked };
  }
  if (how.toggle) {
    if (picked.has(clicked)) {
      picked.delete(clicked);
    } else {
      picked.add(clicked);
    }
    return { picked: inOrder(listed, picked), anchor: clicked };
  }
  return { picked: [clicked], anchor: clicked };
}

/** The picking, of the experiments still ``listed`` (after a refresh of the listing). */
export function stillListed(state: IPicking, listed: string[]): IPicking {
  const present = new Set(listed);
  const picked = state.picked.filter(id => present.has(id));
  const anchor =
    state.anchor !== null && present.has(state.anchor) ? state.anchor : null;
  if (picked.length === state.picked.length && anchor === state.anchor) {
    return state;
  }
  return { picked: inOrder(listed, new Set(picked)), anchor };
}

/** Whether a click event asks to toggle (Ctrl, or Cmd on a Mac) or to pick a range (Shift). */
export function howClicked(event: MouseEvent): IHow {
  return { toggle: event.ctrlKey || event.metaKey, range: event.shiftKey };
}
