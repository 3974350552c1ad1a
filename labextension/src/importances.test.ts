// @vitest-environment happy-dom
// The chart draws into the DOM: a DOM without a browser.
import { describe, expect, it } from 'vitest';

import { ImportanceChart, importanceRows } from './importances';

describe('importanceRows', () => {
  it('puts the most important first, as percentages, bars relative to the widest', () => {
    const rows = importanceRows({
      evaluator: 'PED-ANOVA',
      completed: 12,
      needed: 5,
      importances: { width: 0.25, lr: 0.75 }
    });
    expect(rows).toEqual([
      { name: 'lr', percent: 75, width: 100 },
      { name: 'width', percent: 25, width: (100 * 0.25) / 0.75 }
    ]);
  });

  it('has no rows before there are enough trials', () => {
    expect(
      importanceRows({
        evaluator: 'PED-ANOVA',
        completed: 3,
        needed: 5,
        importances: null
      })
    ).toEqual([]);
  });
});

describe('ImportanceChart', () => {
  it('says how many trials it needs, then draws one bar per parameter', () => {
    const chart = new ImportanceChart();
    chart.draw({
      evaluator: 'PED-ANOVA',
      completed: 3,
      needed: 5,
      importances: null
    });
    expect(chart.node.textContent).toContain(
      'Shown from 5 completed trials on.'
    );
    chart.draw({
      evaluator: 'PED-ANOVA',
      completed: 8,
      needed: 5,
      importances: { lr: 0.6, layers: 0.4 }
    });
    const names = [...chart.node.querySelectorAll('.jd-importance-name')].map(
      n => n.textContent
    );
    expect(names).toEqual(['lr', 'layers']);
    expect(chart.node.textContent).toContain('PED-ANOVA, 8 completed trials');
    chart.draw(null);
    expect(chart.node.textContent).toBe('');
  });
});
