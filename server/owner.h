/*
 * Who owns a session, on disk: sessions/<id>/owner holds one line
 * "v1 USER HOST CREATED" (USER "-" without --users-file, HOST the peer the
 * create came from, CREATED Unix seconds), written like every state file
 * (temporary name, fsync, rename, directory fsync), so a restarted daemon
 * knows whose each reloaded session is. A session dir without the file
 * (written by an older daemon) reloads with no owner: only an admin may
 * touch it under --users-file.
 */
#ifndef DRAPE_SRV_OWNER_H
#define DRAPE_SRV_OWNER_H

#include "server/session.h"

/* Writes s's owner file; EIO with err naming the file and errno's text. */
drape_err srv_owner_save(const srv_session *s, drape_error *err);
/* Reads dir/owner into s->owner, s->host and s->created_unix; false (and s
 * untouched) when it is missing or unreadable. */
bool srv_owner_load(const char *dir, srv_session *s);

#endif
