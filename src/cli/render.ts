/**
 * Human renderings of events, plans and inspections (the CLI's default output).
 */
import type { DurableEventEnvelope } from '../protocol/events.js';
import { describeCheckpoint, type Inspection } from '../inspector/model/inspection.js';
import { safetyLabel, type ClassifiedPlan } from '../inspector/model/safety.js';
import type { ForkSessionResult } from '../inspector/model/fork.js';
import { brief, cell } from './output.js';

const CORRELATIONS = ['requestId', 'turnId', 'modelAttemptId', 'toolAttemptId', 'commandId'] as const;

/** One event as a line: sequence, time, type, correlation IDs, a brief payload. */
export function eventLine(event: DurableEventEnvelope): string {
  const ids = CORRELATIONS.flatMap((key) => {
    const value = event[key as keyof DurableEventEnvelope];
    return typeof value === 'string' ? [`${key.replace(/Id$/, '')}=${value}`] : [];
  }).join(' ');
  return `${String(event.sequence).padStart(6)}  ${event.occurredAt}  ${cell(event.type, 24)} ${ids}  ${brief(event.data, 100)}`;
}

/** The classified plan, one item per line. */
export function planLines(plan: ClassifiedPlan): string[] {
  const out = [`plan: ${plan.action} (${plan.reason})`];
  if (plan.items.length === 0) out.push('  nothing to do');
  for (const item of plan.items) out.push(`  [${safetyLabel(item.safety)}] ${item.summary}`);
  return out;
}

/** The `inspect` summary. */
export function inspectionLines(inspection: Inspection): string[] {
  const out: string[] = [];
  const projection = inspection.projection;
  out.push(`session   ${inspection.sessionId}`);
  out.push(`head      ${inspection.headSequence ?? 'empty'}`);
  if (inspection.projectionFailure !== null) {
    const where = inspection.projectionFailure.sequence === undefined || inspection.projectionFailure.sequence === null
      ? ''
      : ` at sequence ${inspection.projectionFailure.sequence}`;
    out.push(`status    PROJECTION FAILED${where}: ${inspection.projectionFailure.message}`);
  } else if (projection !== null) {
    out.push(`status    ${projection.status}${projection.closedReason === undefined ? '' : ` (${projection.closedReason})`}`);
    const request = projection.activeRequest;
    out.push(`request   ${request === null ? 'none active' : `${request.requestId} (${request.status})`}`);
    const turn = request?.activeTurn;
    out.push(`turn      ${turn === null || turn === undefined ? 'none active' : `${turn.turnId} (turn ${turn.turn})`}`);
    out.push(`requests  ${projection.completedRequests} finished`);
  }
  if (!inspection.leaseSupported) out.push('lease     (this store has no lease API)');
  else if (inspection.lease === null) out.push('lease     never held');
  else {
    const lease = inspection.lease;
    const state = lease.released ? 'released' : lease.active ? `held until ${new Date(lease.expiresAtMs).toISOString()}` : 'expired';
    out.push(`lease     ${lease.ownerId}, fencing token ${lease.fencingToken}, ${state}`);
  }
  if (inspection.durabilitySupported) {
    const next = inspection.nextDeadline;
    out.push(`durability ${inspection.durabilityRecords} records, ${inspection.pendingWaits.length} pending waits`);
    out.push(`next      ${next === null ? 'no pending deadline' : `${next.kind} ${next.key} at ${new Date(next.atMs).toISOString()}`}`);
  }
  if (inspection.checkpointSupported) out.push(`checkpoint ${describeCheckpoint(inspection)}`);
  if (inspection.classified !== null) out.push(...planLines(inspection.classified));
  return out;
}

/** The `fork` report. */
export function forkLines(result: ForkSessionResult): string[] {
  const out = [
    `forked ${result.parentSessionId} at event ${result.at} into ${result.sessionId} (${result.appended} appended, ${result.verified} already there)`,
  ];
  if (result.rerun.tools.length === 0) out.push('a rerun from there repeats no tool call');
  else {
    out.push(`a rerun from there would repeat ${result.rerun.tools.length} tool call(s):`);
    for (const tool of result.rerun.tools) {
      const warn = tool.sideEffect === 'non_idempotent' ? '  <- not safe to repeat' : '';
      out.push(
        `  ${cell(tool.toolName, 24)} ${cell(tool.toolCallId, 20)} ${cell(tool.sideEffect, 15)} started at ${tool.startedSequence} (${tool.position}), source outcome ${tool.sourceOutcome ?? 'none'}${warn}`,
      );
    }
  }
  if (result.rerun.modelAttempts > 0) out.push(`and ${result.rerun.modelAttempts} model attempt(s)`);
  return out;
}
