/*
 * The session.colliders reply's body (colliders.c), for reply.c. Internal
 * to the codec.
 */
#ifndef DRAPE_PROTO_COLLIDERS_H
#define DRAPE_PROTO_COLLIDERS_H

#include "proto/wire.h"

/* Packs session, frame and the colliders into the reply map being built. */
void proto_colliders_encode(proto_wire_enc *e, uint32_t *n, const proto_colliders_rep *r);
/* Reads them from the reply map m (arrays copied into d's arena). */
drape_err proto_colliders_decode(proto_wire_dec *d, const msgpack_object *m, proto_colliders_rep *r);

#endif
