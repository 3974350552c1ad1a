/** A few lines of DOM building, so the views read as what they draw. */

type Child = Node | string | null | undefined | false;

export function h(
  tag: string,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) {
      continue;
    }
    el.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) {
      el.append(child);
    }
  }
  return el;
}

/** Replace ``el``'s children, keeping its scroll position (a redraw must not jump back to the top). */
export function replaceChildren(el: HTMLElement, ...children: Child[]): void {
  const top = el.scrollTop;
  el.replaceChildren(
    ...(children.filter(c => c !== null && c !== undefined && c !== false) as (
      Node | string
    )[])
  );
  el.scrollTop = top;
}
