import { connect, type Socket } from 'node:net';
import { watch, type Deadline } from './deadline.js';
import type { ExchangeObserver } from './exchange.observer.js';
import { HostPicker } from './host.picker.js';

/**
 * A postgres.js `socket` option: connects like postgres.js would, to the host
 * the HostPicker chooses among `hosts` (postgres.js is given only the first,
 * src/db/url.ts), with the statement deadline's watch (and the metrics'
 * observer) attached before postgres.js sees the socket.
 */
export function watchedSocket(deadline: Deadline, hosts: readonly { host: string; port: number }[], observer?: ExchangeObserver) {
  const picker = new HostPicker(hosts.length);
  return (options: { path?: string; ssl?: unknown }): Socket | Promise<Socket> => {
    const tls = Boolean(options.ssl);
    if (options.path) {
      const socket = connect(options.path);
      watch(socket, deadline, tls, observer);
      return socket;
    }
    const { index, delayMs } = picker.pick();
    const open = () => {
      const socket = connect(hosts[index]!.port, hosts[index]!.host);
      watch(socket, deadline, tls, observer, (usable) => picker.report(index, usable));
      return socket;
    };
    return delayMs > 0 ? new Promise<Socket>((resolve) => setTimeout(() => resolve(open()), delayMs)) : open();
  };
}
