/**
 * Makes the commit of the statement that evaluates it not wait for the disk (`synchronous_commit`
 * off for its own transaction only), saving the WAL flush, most of a small write's cost. Only for
 * writes a crash of Postgres may lose without harm because they are made again anyway (a poll's
 * claim and schedule, a lease renewal, a provider callback's record) or that only cost a client a
 * request (a rate-limit token); anything acting outside the database follows with a synchronous
 * commit, which flushes them too. Use it in `from (select ${commitWithoutFlush}) as
 * commit_without_flush` of an update or insert, or selected in a CTE the statement reads.
 */
export const commitWithoutFlush = "set_config('synchronous_commit', 'off', true)";
