/**
 * The order vitest starts test files in (`sequence.sequencer` in vitest.config.ts).
 *
 * All projects share one queue of `maxWorkers` slots, consumed in this order. vitest's own order
 * runs the projects one after the other by name and, on a fresh clone (no results cache), larger
 * files first. Two costs follow from it on two cores: the `workers` projects, whose pool takes
 * seconds to start, ran last with their longest file alone at the end; and long files such as the
 * packed-package test started mid-project, so each project ended with one or two slots idle.
 *
 * This order keeps each project's files together (a project change at the head of the queue stops
 * the finished runner and starts a new one, which imports the modules again) and, inside a
 * project, starts the longest files first, so the run ends on many short files that fill every
 * slot. Durations come from vitest's results cache when a previous run left one, else from
 * test/durations.json (seconds, from a fresh-clone run; `node scripts/test-durations.mjs
 * <report.json>` writes it from a vitest JSON report), else 0.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Projects in the order they start: the workerd pools first (slow to start, long conformance file). */
const PROJECT_ORDER = ['workers', 'workers-durability', 'http', 'postgres', 'node'];

const RECORDED: Record<string, number> = JSON.parse(
  readFileSync(new URL('./durations.json', import.meta.url), 'utf8'),
) as Record<string, number>;

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const expected = (file: TestSpecification): number => {
      const relative = path.relative(root, file.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${file.project.name}:${relative}`);
      return cached ? cached.duration / 1000 : (RECORDED[relative] ?? 0);
    };
    const rank = (file: TestSpecification): number => {
      const index = PROJECT_ORDER.indexOf(file.project.name);
      return index === -1 ? PROJECT_ORDER.length : index;
    };
    return [...files].sort((a, b) => rank(a) - rank(b) || expected(b) - expected(a));
  }
}
