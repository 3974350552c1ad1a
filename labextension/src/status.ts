/** The status-bar item while experiments run ("hpo train: 7/32 · best 0.975"); a click opens the panel. */

import { Widget } from '@lumino/widgets';

import { ExperimentsModel } from './experiments';
import { statusText } from './format';

export class ExperimentsStatus extends Widget {
  constructor(
    readonly model: ExperimentsModel,
    onClick: () => void
  ) {
    super();
    this.addClass('jd-status');
    this.node.title =
      'Running experiments: click to open the Experiments panel';
    this.node.onclick = onClick;
    model.changed.connect(this._draw, this);
    this._draw();
  }

  /** Whether there is anything to show (the item hides when no experiment runs). */
  get active(): boolean {
    return statusText(this.model.experiments) !== '';
  }

  dispose(): void {
    this.model.changed.disconnect(this._draw, this);
    super.dispose();
  }

  private _draw(): void {
    this.node.textContent = statusText(this.model.experiments);
  }
}
