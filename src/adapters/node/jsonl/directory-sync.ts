/**
 * Directory fsync: after creating or renaming a file, fsync its directory so the new name survives
 * power loss, not just the file's bytes. Platforms that cannot open or fsync a directory
 * (Windows) skip it; elsewhere a failure is reported.
 */
import { close, constants, fsync, open } from 'node:fs';
import { promisify } from 'node:util';

const openAsync = promisify(open);
const fsyncAsync = promisify(fsync);
const closeAsync = promisify(close);

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
    // Some platforms (Windows) refuse fsync on directories; elsewhere it is a real failure.
    const code = (error as { code?: unknown }).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM') throw error;
  } finally {
    await closeAsync(fd);
  }
}
