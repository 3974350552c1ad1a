/**
 * Tell each Python kernel of a notebook (or console) that JupyterLab or Notebook 7 with this extension shows
 * its output, so that ``%%distribute`` (and ``hpo()``...) draw their live view as one small MIME bundle this
 * extension renders, instead of the ipywidgets view other frontends get. The flag is an environment variable set by a silent
 * execute when the kernel is ready and again after every restart (a restart starts a new process).
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel } from '@jupyterlab/services';
import { ISignal } from '@lumino/signaling';

export const FLAG_CODE =
  'import os as _jd_os; _jd_os.environ["JUPYTER_DIST_FRONTEND"] = "jupyterlab"; del _jd_os';

async function flag(kernel: Kernel.IKernelConnection): Promise<void> {
  const info = await kernel.info;
  if (info.language_info.name !== 'python') {
    return;
  }
  await kernel.requestExecute({
    code: FLAG_CODE,
    silent: true,
    store_history: false
  }).done;
}

/** ``node`` carries data-jupyter-dist="flagged" while its kernel is flagged (tests wait for it). */
function watch(context: ISessionContext, node: HTMLElement): void {
  let pending = true; // a kernel not flagged yet (new, changed or restarted)
  const unflag = () => {
    pending = true;
    delete node.dataset.jupyterDist;
  };
  const maybeFlag = () => {
    const kernel = context.session?.kernel;
    if (pending && kernel && kernel.status === 'idle') {
      pending = false;
      flag(kernel)
        .then(() => {
          if (!pending) {
            node.dataset.jupyterDist = 'flagged';
          }
        })
        .catch(reason => {
          unflag();
          console.warn('jupyter-dist: could not flag the kernel', reason);
        });
    }
  };
  context.kernelChanged.connect(() => {
    unflag();
    maybeFlag();
  });
  context.statusChanged.connect((_, status) => {
    if (
      status === 'restarting' ||
      status === 'autorestarting' ||
      status === 'starting'
    ) {
      unflag();
    }
    maybeFlag();
  });
  void context.ready.then(maybeFlag);
}

/**
 * Watch every main-area widget that has a kernel session (notebooks, consoles): found by their
 * ``sessionContext``, which spares this extension a dependency on the notebook package. ``changed`` is a
 * signal the shell emits when widgets come and go (JupyterLab's layoutModified, Notebook 7's currentChanged).
 * Returns the scan, to run again when the shell has restored its layout.
 */
export function flagKernels(
  shell: JupyterFrontEnd.IShell,
  changed: ISignal<any, any> | null
): () => void {
  const seen = new WeakSet<ISessionContext>();
  const scan = () => {
    for (const widget of shell.widgets('main')) {
      const context = (widget as { sessionContext?: ISessionContext })
        .sessionContext;
      if (context && !seen.has(context)) {
        seen.add(context);
        watch(context, widget.node);
      }
    }
  };
  changed?.connect(scan);
  scan();
  return scan;
}
