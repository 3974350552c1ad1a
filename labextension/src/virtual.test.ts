import { describe, expect, it } from 'vitest';

import { RowWindow, rowsInView } from './virtual';

describe('rowsInView', () => {
  it('is the rows a viewport covers, within the table', () => {
    expect(rowsInView(0, 400, 20, 10000)).toEqual({ first: 0, last: 20 });
    expect(rowsInView(1010, 400, 20, 10000)).toEqual({ first: 50, last: 71 });
    expect(rowsInView(199_900, 400, 20, 10000)).toEqual({
      first: 9995,
      last: 10000
    });
    expect(rowsInView(0, 400, 20, 3)).toEqual({ first: 0, last: 3 });
    expect(rowsInView(500, 400, 20, 0)).toEqual({ first: 0, last: 0 });
  });
});

describe('RowWindow', () => {
  it('renders the rows in view and a margin, and renders again only once the view leaves them', () => {
    const rows = new RowWindow(30);
    expect(rows.update(0, 400, 20, 10000)).toEqual({ first: 0, last: 50 });
    expect(rows.update(200, 400, 20, 10000)).toBeNull(); // rows 10-30: rendered already
    expect(rows.update(400, 400, 20, 10000)).toBeNull(); // rows 20-40
    expect(rows.update(1000, 400, 20, 10000)).toEqual({ first: 20, last: 100 });
    // Far down at once (the scrollbar dragged to the end): the last rows, never more than the view and margins.
    const end = rows.update(199_600, 400, 20, 10000);
    expect(end).toEqual({ first: 9950, last: 10000 });
    rows.reset();
    expect(rows.update(199_600, 400, 20, 10000)).toEqual(end);
  });
  it('renders again when the rows in view grow past the table it rendered', () => {
    const rows = new RowWindow(5);
    expect(rows.update(0, 400, 20, 3)).toEqual({ first: 0, last: 3 });
    expect(rows.update(0, 400, 20, 3)).toBeNull();
    expect(rows.update(0, 400, 20, 12)).toEqual({ first: 0, last: 12 }); // new trials came
  });
});
