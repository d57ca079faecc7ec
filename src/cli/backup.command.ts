import { runDataCommand } from './backup.shared.js';

/** docs/operations.md#backup-and-restore: writes every table and sequence of the service's data to FILE. */
export function run(args: string[]): Promise<number> {
  return runDataCommand('backup', args);
}
