/*
 * Several cloth objects in one sim (drape_sim_desc.objects): a shirt and a
 * jacket solved as one mesh of consecutive vertex ranges. Nothing in the
 * constraints knows about objects (an edge never joins two, since no
 * triangle does); what they change is which self-collision pairs exist:
 * two objects meet only when each one's layer shares a bit with the
 * other's collides_with. Pairs between objects that meet are ordinary
 * self-collision pairs, so the layers get its guarantee (pushes to the
 * thickness, the swept guard: nothing apart at the start of a substep is
 * crossed at its end); pairs between objects that do not are never
 * candidates and never guarded, so those cloths pass through each other.
 */
#include "server/sim/internal.h"

#include <stdlib.h>
#include <string.h>

drape_err sim_objects_validate(const drape_sim_desc *d, drape_error *err)
{
	if (d->object_count == 0)
		return DRAPE_OK;
	if (d->objects == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "objects: NULL with object_count %u",
					d->object_count);
	if (d->object_count > DRAPE_SIM_MAX_OBJECTS)
		return drape_error_setf(err, DRAPE_ELIMIT, "object_count: %u > maximum %u",
					d->object_count, DRAPE_SIM_MAX_OBJECTS);
	uint64_t next = 0;
	for (uint32_t i = 0; i < d->object_count; i++) {
		const drape_sim_object *o = &d->objects[i];
		if (o->first_vertex != next)
			return drape_error_setf(err, DRAPE_EINVAL,
						"objects[%u].first_vertex: %u, expected %llu (objects are "
						"consecutive vertex ranges in order)",
						i, o->first_vertex, (unsigned long long)next);
		if (o->vertex_count == 0)
			return drape_error_setf(err, DRAPE_EINVAL, "objects[%u].vertex_count: 0", i);
		next += o->vertex_count;
		if (next > d->vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE,
						"objects[%u].vertex_count: %u runs past vertex_count %u", i,
						o->vertex_count, d->vertex_count);
	}
	if (next != d->vertex_count)
		return drape_error_setf(err, DRAPE_EINVAL,
					"objects: cover %llu vertices of vertex_count %u",
					(unsigned long long)next, d->vertex_count);
	/* Vertex v's object by binary search over the first vertices. */
	for (uint32_t t = 0; t < d->triangle_count; t++) {
		uint32_t ob[3];
		for (int j = 0; j < 3; j++) {
			uint32_t v = d->triangles[3 * (size_t)t + j], lo = 0, hi = d->object_count;
			while (hi - lo > 1) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (d->objects[mid].first_vertex <= v)
					lo = mid;
				else
					hi = mid;
			}
			ob[j] = lo;
		}
		if (ob[0] != ob[1] || ob[1] != ob[2])
			return drape_error_setf(err, DRAPE_EINVAL,
						"triangles[%u]: joins objects %u, %u and %u", t, ob[0],
						ob[1], ob[2]);
	}
	return DRAPE_OK;
}

drape_err sim_objects_build(drape_sim *sim, const drape_sim_desc *d,
			    uint32_t (*internal)(const drape_sim *, uint32_t), drape_error *err)
{
	const uint32_t m = d->object_count;
	if (m <= 1)
		return DRAPE_OK;
	sim->obj = malloc((size_t)sim->n * sizeof *sim->obj);
	sim->obj_pass = malloc((size_t)m * m);
	if (sim->obj == NULL || sim->obj_pass == NULL) {
		sim_objects_free(sim);
		return drape_error_setf(err, DRAPE_ENOMEM, "objects: out of memory");
	}
	sim->obj_count = m;
	for (uint32_t k = 0; k < m; k++) {
		const drape_sim_object *o = &d->objects[k];
		for (uint32_t v = o->first_vertex; v < o->first_vertex + o->vertex_count; v++)
			sim->obj[internal(sim, v)] = k;
	}
	for (uint32_t a = 0; a < m; a++)
		for (uint32_t b = 0; b < m; b++) {
			const drape_sim_object *A = &d->objects[a], *B = &d->objects[b];
			sim->obj_pass[a * m + b] =
				a == b || ((A->layer & B->collides_with) && (B->layer & A->collides_with));
		}
	return DRAPE_OK;
}

void sim_objects_free(drape_sim *sim)
{
	free(sim->obj);
	free(sim->obj_pass);
	sim->obj = NULL;
	sim->obj_pass = NULL;
	sim->obj_count = 0;
}

size_t sim_objects_bytes(const drape_sim *sim)
{
	return sim->obj ? (size_t)sim->n * sizeof *sim->obj + (size_t)sim->obj_count * sim->obj_count : 0;
}
