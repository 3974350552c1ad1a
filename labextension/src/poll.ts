/** Asking the server again and again: backing off when it fails, pausing while the browser tab is hidden. */

import { Poll } from '@lumino/polling';

export function every(
  seconds: number,
  name: string,
  factory: () => Promise<void>,
  maxSeconds = 60
): Poll {
  return new Poll({
    factory,
    frequency: {
      interval: seconds * 1000,
      backoff: true,
      max: maxSeconds * 1000
    },
    standby: 'when-hidden',
    name
  });
}
