/* Interrupted runs continue at start (resume.h). */
#include "server/resume.h"

#include "server/budget.h"
#include "server/checkpoint.h"
#include "server/log.h"
#include "server/server.h"

size_t srv_resume_interrupted(srv_server *srv)
{
	size_t resumed = 0;
	for (size_t i = 0; i < srv->sessions.count; i++) {
		srv_session *s = srv->sessions.items[i];
		if (!s->interrupted || s->deleted)
			continue;
		s->interrupted = false;
		if (!srv->cfg->resume_interrupted) {
			srv_info("session %u was interrupted at frame %u; session.resume continues it "
				 "(--no-resume-interrupted)",
				 (unsigned)s->id, (unsigned)s->frames_done);
			continue;
		}
		if (s->last_target != 0 && s->frames_done >= s->last_target) {
			/* Its last frame reached the disk before the stop, its
			 * final checkpoint did not: the run had finished. */
			s->state = PROTO_STATE_DONE;
			srv_ckpt_save_run(srv, s, NULL);
			srv_info("session %u: its run had reached frame %u, its target, when the daemon stopped: done",
				 (unsigned)s->id, (unsigned)s->frames_done);
			continue;
		}
		proto_reply rep;
		proto_reply_init(&rep, PROTO_OP_SESSION_RESUME, 0);
		drape_error err;
		drape_error_clear(&err);
		drape_err rc = srv_budget_check(srv, "resume", srv_budget_run_bytes(s), &err);
		if (rc == DRAPE_OK)
			rc = srv_op_resume(srv, s, &rep, &err);
		if (rc != DRAPE_OK) {
			srv_warn("session %u was interrupted at frame %u and stays canceled: %s", (unsigned)s->id,
				 (unsigned)s->frames_done, err.message);
			continue;
		}
		resumed++;
		srv_info("session %u (user %s, from %s) was interrupted at frame %u: resumed, target %u", (unsigned)s->id,
			 s->owner[0] ? s->owner : "-", s->host[0] ? s->host : "-", (unsigned)s->frames_done,
			 (unsigned)s->last_target);
	}
	return resumed;
}
