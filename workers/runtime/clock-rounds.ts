import type { JobLoop } from './job-loop';

/**
 * The longest a clock loop (rows due at a moment, counted in billing days) sleeps: a moment set by
 * another process meanwhile is found at least this often; a tenth of a billing day when days are
 * short (demos, tests), so it is never late by more than that.
 */
export function clockSleepMs(billingDayS: number): number {
  return Math.min(5000, Math.max(50, billingDayS * 100));
}

/**
 * `nextRoundInMs` of a clock loop: again at once after a full round, the longest sleep while every
 * slot is busy (a finished one wakes the loop) or when nothing waits at all, else until the next row
 * is due. `secondsUntilNextDue` answers null when nothing waits, 0 when a row is due now.
 */
export function clockRounds(longestSleepMs: number, secondsUntilNextDue: () => Promise<number | null>): NonNullable<JobLoop<unknown>['nextRoundInMs']> {
  return async ({ claimed, room, roomLeft }) => {
    if (room > 0 && claimed >= room) return 0;
    if (roomLeft === 0) return longestSleepMs;
    const seconds = await secondsUntilNextDue();
    return seconds === null ? longestSleepMs : Math.min(longestSleepMs, Math.ceil(seconds * 1000));
  };
}
