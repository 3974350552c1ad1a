/** The Experiments panel's icon: learning curves on axes (JupyterLab's icon classes follow the theme). */

import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M3 3h2v16h16v2H3z"/>
    <path d="M7 16.5l4.2-6 3.3 3 5-8 1.7 1.1-6.3 10-3.3-3-3.2 4.6z"/>
  </g>
</svg>`;

export const experimentsIcon = new LabIcon({
  name: 'jupyter-dist:experiments',
  svgstr
});
