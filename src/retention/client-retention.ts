// A client's own retention period (openapi.yaml, AccountUpdate's `retention`), in seconds, beside
// the server's RETENTION, in milliseconds: the rules the admin API and the pruner share.

/** Whether a client may be given `seconds`: never longer than RETENTION, which bounds every client's history. */
export const retentionAllowed = (seconds: number, retentionMs: number): boolean => seconds * 1000 <= retentionMs;

/**
 * The period a client's history is pruned by, in milliseconds: its own, or RETENTION when it has
 * none, or when RETENTION has been set shorter since its own was set.
 */
export const appliedRetentionMs = (ownSeconds: number | null, retentionMs: number): number =>
  ownSeconds === null ? retentionMs : Math.min(ownSeconds * 1000, retentionMs);
