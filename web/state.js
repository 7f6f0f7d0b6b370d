// What the page knows across views.

// The caller's name, typed at sign-in (the API has no "who am I"; probing an admin-only call
// instead would put a refusal in the audit log at every sign-in).
export const caller = { user: "" };

// Runs started, "job.attempt" -> started_at, as the event stream reported them, for "jobs
// started per minute".
export const starts = new Map();

// Runs started per minute over the last `minutes`: those the stream reported and, for runs
// that began before the page was opened, the active jobs' latest runs.
export function startsPerMinute(activeJobs, minutes) {
  const since = Date.now() - minutes * 60000;
  const seen = new Map(starts);
  for (const j of activeJobs) {
    const run = j.runs && j.runs[j.runs.length - 1];
    if (run && run.started_at > 0) seen.set(j.id + "." + run.attempt, run.started_at);
  }
  let n = 0;
  for (const at of seen.values()) if (at >= since) n++;
  return n / minutes;
}
