/**
 * Directory fsync: after creating or renaming a file, fsync its directory so the new name survives
 * power loss, not just the file's bytes. Platforms that cannot open or fsync a directory
 * (Windows) skip it; elsewhere a failure is reported. The synchronous form serves the commit path
 * (once per new file, right after the file's own synchronous flush); the asynchronous one serves
 * lease replacement.
 */
import { close, closeSync, constants, fsync, fsyncSync, open, openSync } from 'node:fs';
import { promisify } from 'node:util';

const openAsync = promisify(open);
const fsyncAsync = promisify(fsync);
const closeAsync = promisify(close);

/** True for the errors of platforms that refuse fsync on directories (Windows). */
function isUnsupportedDirectorySync(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === 'EISDIR' || code === 'EINVAL' || code === 'EPERM';
}

/** Fsyncs a directory so a rename inside it survives power loss (a no-op where unsupported). */
export async function syncDirectory(directory: string): Promise<void> {
  let fd: number;
  try {
    fd = await openAsync(directory, constants.O_RDONLY);
  } catch (error) {
    if (process.platform === 'win32') return;
    throw error;
  }
  try {
    await fsyncAsync(fd);
  } catch (error) {
    if (!isUnsupportedDirectorySync(error)) throw error;
  } finally {
    await closeAsync(fd);
  }
}

/** {@link syncDirectory}, as blocking system calls. */
export function syncDirectorySync(directory: string): void {
  let fd: number;
  try {
    fd = openSync(directory, constants.O_RDONLY);
  } catch (error) {
    if (process.platform === 'win32') return;
    throw error;
  }
  try {
    fsyncSync(fd);
  } catch (error) {
    if (!isUnsupportedDirectorySync(error)) throw error;
  } finally {
    closeSync(fd);
  }
}
