/**
 * jupyter_dist's JupyterLab extension: the Experiments panel (left sidebar), one main-area view per opened
 * experiment or comparison of several, a status-bar item while experiments run, and the palette commands "Experiments: Open Panel" and
 * "Experiments: Refresh". Everything is read from the server extension's REST API, so it shows what any kernel
 * of this server ran, including kernels that are gone.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { ComparisonView } from './compare';
import { ExperimentView } from './detail';
import { DEFAULT_REFRESH_S, ExperimentsModel } from './experiments';
import { experimentsIcon } from './icon';
import { ExperimentsPanel } from './panel';
import { ExperimentsStatus } from './status';
import type { IExperimentSummary } from './wire';

const PLUGIN_ID = 'jupyter-dist:plugin';

export namespace CommandIDs {
  export const openPanel = 'jupyter-dist:open-panel';
  export const refresh = 'jupyter-dist:refresh';
  export const openExperiment = 'jupyter-dist:open-experiment';
  export const compareExperiments = 'jupyter-dist:compare-experiments';
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'The Experiments panel of jupyter_dist.',
  autoStart: true,
  optional: [ICommandPalette, ISettingRegistry, IStatusBar, ILayoutRestorer],
  activate: async (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    statusBar: IStatusBar | null,
    restorer: ILayoutRestorer | null
  ) => {
    let refreshSeconds = DEFAULT_REFRESH_S;
    const model = new ExperimentsModel(refreshSeconds);
    const tracker = new WidgetTracker<MainAreaWidget<ExperimentView>>({
      namespace: 'jupyter-dist-experiment'
    });
    const comparisons = new WidgetTracker<MainAreaWidget<ComparisonView>>({
      namespace: 'jupyter-dist-comparison'
    });

    // One view per experiment (or comparison): the open one is brought forward, else one is made in the main
    // area, its tab named as its content names itself.
    const openInMain = <T extends Widget>(
      views: WidgetTracker<MainAreaWidget<T>>,
      id: string,
      make: () => T
    ) => {
      const open = views.find(w => w.id === id);
      if (open) {
        app.shell.activateById(open.id);
        return open;
      }
      const widget = new MainAreaWidget({ content: make() });
      widget.id = id;
      widget.title.icon = experimentsIcon;
      widget.content.title.changed.connect(() => {
        widget.title.label = widget.content.title.label;
      });
      void views.add(widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
      return widget;
    };
    const openExperiment = (id: string) =>
      openInMain(
        tracker,
        `jupyter-dist-experiment-${id}`,
        () => new ExperimentView(id, refreshSeconds)
      );
    const compareExperiments = (ids: string[]) =>
      openInMain(
        comparisons,
        `jupyter-dist-comparison-${ids.join('-')}`,
        () => new ComparisonView(ids, refreshSeconds)
      );

    const panel = new ExperimentsPanel(
      model,
      (e: IExperimentSummary) =>
        app.commands.execute(CommandIDs.openExperiment, { id: e.id }),
      ids => app.commands.execute(CommandIDs.compareExperiments, { ids })
    );
    panel.title.icon = experimentsIcon;
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, panel.id);

    app.commands.addCommand(CommandIDs.openPanel, {
      label: 'Experiments: Open Panel',
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Experiments: Refresh',
      execute: () => model.refresh()
    });
    app.commands.addCommand(CommandIDs.openExperiment, {
      label: args => `Open Experiment ${args.id ?? ''}`,
      execute: args => openExperiment(String(args.id))
    });
    app.commands.addCommand(CommandIDs.compareExperiments, {
      label: 'Compare Experiments',
      execute: args => compareExperiments((args.ids as string[]) ?? [])
    });
    palette?.addItem({
      command: CommandIDs.openPanel,
      category: 'Experiments'
    });
    palette?.addItem({ command: CommandIDs.refresh, category: 'Experiments' });
    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIDs.openExperiment,
        args: w => ({ id: w.content.experimentId }),
        name: w => w.content.experimentId
      });
      void restorer.restore(comparisons, {
        command: CommandIDs.compareExperiments,
        args: w => ({ ids: w.content.experimentIds }),
        name: w => w.content.experimentIds.join(',')
      });
    }

    if (statusBar) {
      const item = new ExperimentsStatus(model, () =>
        app.commands.execute(CommandIDs.openPanel)
      );
      statusBar.registerStatusItem('jupyter-dist:status', {
        item,
        align: 'left',
        rank: 5,
        isActive: () => item.active,
        activeStateChanged: model.changed
      });
    }

    if (settingRegistry) {
      try {
        const settings = await settingRegistry.load(PLUGIN_ID);
        const apply = () => {
          refreshSeconds = settings.get('refreshInterval').composite as number;
          model.refreshSeconds = refreshSeconds;
        };
        apply();
        settings.changed.connect(apply);
      } catch (reason) {
        console.error('jupyter-dist: could not load the settings', reason);
      }
    }
  }
};

export default plugin;
