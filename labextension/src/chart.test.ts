import { describe, expect, it } from 'vitest';
import type uPlot from 'uplot';

import { fittedAxisSize } from './chart';

/** A uPlot as fittedAxisSize sees it: one axis, and a canvas whose text is 7 px a character. */
function plotWith(lastSize?: number): uPlot {
  const ctx = {
    font: '',
    measureText: (text: string) => ({ width: 7 * text.length })
  };
  return {
    axes: [
      {
        ticks: { size: 10 },
        gap: 5,
        font: ['12px sans-serif', 12],
        _size: lastSize
      }
    ],
    ctx
  } as unknown as uPlot;
}

describe('fittedAxisSize', () => {
  it("keeps uPlot's width for short labels and before there are any", () => {
    expect(fittedAxisSize(plotWith(), ['0.8', '0.9', '1'], 0, 0)).toBe(50);
    expect(fittedAxisSize(plotWith(), null, 0, 0)).toBe(50);
  });
  it('widens to the widest label, its ticks and its gap', () => {
    // "0.92345": 7 characters, 49 px; with the ticks (10), the gap (5) and 2 px to spare
    expect(
      fittedAxisSize(plotWith(), ['0.9234', '0.92345', '0.9235'], 0, 0)
    ).toBe(66);
  });
  it('keeps its last answer once uPlot asks again, so that the layout settles', () => {
    expect(fittedAxisSize(plotWith(72), ['0.92345'], 0, 2)).toBe(72);
  });
});
