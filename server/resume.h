/*
 * Restart without lost work: runs the daemon's stop cut short (a crash,
 * SIGKILL, or a shutdown in the middle of a run) continue by themselves
 * once the daemon is up again (--resume-interrupted, the default), from
 * the frames their checkpoint and frame cache hold; the solver is
 * deterministic, so the frames that follow are those an uninterrupted run
 * would have given. With --no-resume-interrupted they stay canceled and
 * wait for session.resume, as before. Loop thread.
 */
#ifndef DRAPE_SRV_RESUME_H
#define DRAPE_SRV_RESUME_H

#include <stddef.h>

struct srv_server;

/* Resumes every reloaded session marked interrupted (checkpoint.c sets the
 * mark); a session that cannot be resumed (memory budget, nothing left to
 * solve) stays canceled and the log says why. Returns how many resumed. */
size_t srv_resume_interrupted(struct srv_server *srv);

#endif
