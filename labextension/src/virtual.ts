/**
 * Which rows of a long table are in the page: those in view and a margin around them (virtualised rows), so a
 * table of 10,000 trials costs the page a few dozen rows, however it is scrolled.
 */

/** Rows ``first`` (included) to ``last`` (excluded). */
export interface IRowRange {
  first: number;
  last: number;
}

/** The rows a viewport shows: ``top`` pixels scrolled past the table's header, ``height`` pixels tall. */
export function rowsInView(
  top: number,
  height: number,
  rowHeight: number,
  count: number
): IRowRange {
  const first = Math.min(count, Math.max(0, Math.floor(top / rowHeight)));
  const last = Math.min(
    count,
    Math.max(first, Math.ceil((top + height) / rowHeight))
  );
  return { first, last };
}

/**
 * The rows to render as a viewport scrolls: the rows in view and ``margin`` rows each side of them, chosen again
 * only when the rows in view reach past what is rendered, so scrolling a little renders nothing new.
 */
export class RowWindow {
  private _rendered: IRowRange | null = null;

  constructor(readonly margin = 30) {}

  get rendered(): IRowRange | null {
    return this._rendered;
  }

  /** Forget what is rendered (the rows changed): the next ``update`` chooses again. */
  reset(): void {
    this._rendered = null;
  }

  /** The rows to render now, or null when those rendered already cover the view. */
  update(
    top: number,
    height: number,
    rowHeight: number,
    count: number
  ): IRowRange | null {
    const view = rowsInView(top, height, rowHeight, count);
    const shown = this._rendered;
    if (
      shown &&
      shown.first <= view.first &&
      view.last <= shown.last &&
      shown.last <= count
    ) {
      return null;
    }
    this._rendered = {
      first: Math.max(0, view.first - this.margin),
      last: Math.min(count, view.last + this.margin)
    };
    return this._rendered;
  }
}
