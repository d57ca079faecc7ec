import { runDataCommand } from './backup.shared.js';

/** docs/operations.md#backup-and-restore: replaces all of the service's data with a backup, in one transaction. */
export function run(args: string[]): Promise<number> {
  return runDataCommand('restore', args);
}
