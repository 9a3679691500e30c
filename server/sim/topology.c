/*
 * Mesh topology in O(n log n), without hash maps: every triangle contributes
 * its three half-edges as 64-bit keys (min << 32 | max) tagged with the
 * half-edge's id; sorting the keys puts the half-edges of one undirected edge
 * next to each other. A run of one key is a boundary edge, of two an interior
 * edge (one bend and one shear record), of three or more a non-manifold edge
 * (stretch only, counted).
 */
#include "server/sim/topology.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A half-edge: key (min << 32 | max) and id = triangle * 3 + local edge. The
 * id breaks ties so the sort order, hence the records, are deterministic
 * whatever qsort's algorithm. */
typedef struct half_edge {
	uint64_t key;
	uint32_t id;
} half_edge;

static int half_edge_cmp(const void *a, const void *b)
{
	const half_edge *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int dist_cmp(const void *a, const void *b)
{
	const sim_dist *x = a, *y = b;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return (x->b > y->b) - (x->b < y->b);
}

/* Edges shorter than this at rest have no direction to correct along. */
#define SIM_MIN_REST_LENGTH 1e-9f

/*
 * A triangle is "zero-area" when twice its area is below this fraction of its
 * longest edge squared: a sliver whose normal is dominated by rounding, so
 * bending and wind (which need that normal) leave it out.
 */
#define SIM_SLIVER_RATIO 1e-6f

drape_err sim_colour_records(void *records, size_t size, uint32_t count, uint32_t arity,
			     uint64_t *mask, uint32_t vertex_count, sim_colouring *col)
{
	col->start = NULL;
	col->colours = 0;
	col->overflow = 0;
	uint8_t *colour = malloc(count ? count : 1);
	unsigned char *tmp = malloc(count ? (size_t)count * size : 1);
	col->start = calloc(SIM_MAX_COLOURS + 1, sizeof *col->start);
	if (colour == NULL || tmp == NULL || col->start == NULL) {
		free(colour);
		free(tmp);
		free(col->start);
		col->start = NULL;
		return DRAPE_ENOMEM;
	}
	(void)vertex_count;
	unsigned char *rec = records;
	/* Only the records' own vertices are read: clear just those, so that
	 * colouring a tile's few records costs no sweep of the whole mask. */
	for (uint32_t i = 0; i < count; i++) {
		const uint32_t *v = (const uint32_t *)(const void *)(rec + (size_t)i * size);
		for (uint32_t j = 0; j < arity; j++)
			mask[v[j]] = 0;
	}
	uint32_t used = 0;
	for (uint32_t i = 0; i < count; i++) {
		const uint32_t *v = (const uint32_t *)(const void *)(rec + (size_t)i * size);
		uint64_t busy = 0;
		for (uint32_t j = 0; j < arity; j++)
			busy |= mask[v[j]];
		uint32_t c = 0;
		while (c < SIM_OVERFLOW_COLOUR && (busy >> c & 1u))
			c++;
		/* The overflow colour is never marked busy: it takes whatever
		 * is left and is projected serially. */
		if (c == SIM_OVERFLOW_COLOUR)
			col->overflow = 1;
		else
			for (uint32_t j = 0; j < arity; j++)
				mask[v[j]] |= UINT64_C(1) << c;
		colour[i] = (uint8_t)c;
		if (c + 1 > used)
			used = c + 1;
	}
	/* Counting sort by colour, stable so each colour keeps vertex order. */
	uint32_t *start = col->start;
	for (uint32_t i = 0; i < count; i++)
		start[colour[i] + 1]++;
	for (uint32_t c = 0; c < SIM_MAX_COLOURS; c++)
		start[c + 1] += start[c];
	uint32_t fill[SIM_MAX_COLOURS];
	memcpy(fill, start, sizeof fill);
	for (uint32_t i = 0; i < count; i++)
		memcpy(tmp + (size_t)fill[colour[i]]++ * size, rec + (size_t)i * size, size);
	if (count)
		memcpy(records, tmp, (size_t)count * size);
	col->colours = used;
	col->overflow = col->overflow && used == SIM_MAX_COLOURS;
	free(colour);
	free(tmp);
	return DRAPE_OK;
}

/*
 * The tiled layout (internal.h, sim_tiling) of one kind's records, which
 * arrive sorted by vertex: a stable sort by tile (the boundary records
 * last) keeps each tile's records in vertex order; each tile is coloured on
 * its own, and the boundary records over the whole mesh into col, whose
 * starts are then made absolute.
 */
static drape_err tile_records(void *records, size_t size, uint32_t count, uint32_t arity,
			      uint64_t *mask, uint32_t n, uint32_t tiles, uint32_t tv, sim_tiling *tl,
			      sim_colouring *col)
{
	unsigned char *rec = records;
	uint32_t *tile = malloc((count ? count : 1) * sizeof *tile);
	uint32_t *at = calloc((size_t)tiles + 2, sizeof *at);
	unsigned char *tmp = malloc(count ? (size_t)count * size : 1);
	tl->first = calloc((size_t)tiles + 1, sizeof *tl->first);
	tl->run = malloc(((size_t)tiles * SIM_MAX_COLOURS + 1) * sizeof *tl->run);
	tl->serial = malloc((size_t)tiles * SIM_MAX_COLOURS + 1);
	drape_err rc = DRAPE_ENOMEM;
	if (!tile || !at || !tmp || !tl->first || !tl->run || !tl->serial)
		goto done;
	for (uint32_t i = 0; i < count; i++) {
		const uint32_t *v = (const uint32_t *)(const void *)(rec + (size_t)i * size);
		uint32_t t = v[0] / tv;
		for (uint32_t j = 1; j < arity; j++)
			if (v[j] / tv != t)
				t = tiles;
		tile[i] = t;
		at[t + 1]++;
	}
	for (uint32_t t = 0; t <= tiles; t++)
		at[t + 1] += at[t];
	for (uint32_t i = 0; i < count; i++)
		memcpy(tmp + (size_t)at[tile[i]]++ * size, rec + (size_t)i * size, size);
	if (count)
		memcpy(records, tmp, (size_t)count * size);
	/* at[t] is now the end of tile t's records, at[tiles] the end of the
	 * boundary records (count). */
	uint32_t runs = 0, begin = 0;
	for (uint32_t t = 0; t < tiles; t++) {
		uint32_t end = at[t];
		tl->first[t] = runs;
		if (end > begin) {
			sim_colouring c;
			rc = sim_colour_records(rec + (size_t)begin * size, size, end - begin, arity, mask,
						n, &c);
			if (rc != DRAPE_OK)
				goto done;
			for (uint32_t g = 0; g < c.colours; g++) {
				tl->run[runs] = begin + c.start[g];
				tl->serial[runs] = c.overflow && g + 1 == c.colours;
				runs++;
			}
			free(c.start);
		}
		begin = end;
	}
	tl->first[tiles] = runs;
	tl->run[runs] = begin;
	rc = sim_colour_records(rec + (size_t)begin * size, size, count - begin, arity, mask, n, col);
	if (rc == DRAPE_OK)
		for (uint32_t c = 0; c <= SIM_MAX_COLOURS; c++)
			col->start[c] += begin;
done:
	free(tile);
	free(at);
	free(tmp);
	return rc;
}

uint32_t sim_tile_vertices(uint32_t n)
{
	if (n >= SIM_TILE_VERTICES)
		return SIM_TILE_VERTICES;
	uint32_t tv = SIM_TILE_MIN_VERTICES;
	while (tv < SIM_TILE_VERTICES && (uint64_t)tv * SIM_SMALL_TILES < n)
		tv *= 2;
	return tv;
}

/* Colours of the busiest tile plus the boundary colours: the most colour
 * runs one vertex can be swept in per iteration of a kind. */
static uint32_t tiled_colours(const sim_tiling *tl, uint32_t tiles, const sim_colouring *col)
{
	uint32_t most = 0;
	for (uint32_t t = 0; t < tiles; t++)
		if (tl->first[t + 1] - tl->first[t] > most)
			most = tl->first[t + 1] - tl->first[t];
	return most + col->colours;
}

static float dist3(sim_vec4 a, sim_vec4 b)
{
	return v3_len(v3_sub(v3_of4(a), v3_of4(b)));
}

/*
 * Without colouring (SIM_CREATE_NATURAL, the plain Gauss-Seidel reference):
 * one group holding every record in its sorted order, marked as the serial
 * overflow colour so that nothing ever projects it in parallel.
 */
static drape_err serial_group(uint32_t count, sim_colouring *col)
{
	col->start = calloc(SIM_MAX_COLOURS + 1, sizeof *col->start);
	if (col->start == NULL)
		return DRAPE_ENOMEM;
	col->start[1] = count;
	col->colours = count ? 1u : 0u;
	col->overflow = count != 0;
	return DRAPE_OK;
}

/* A triangle as a record for sim_colour_records: its vertices, then its
 * index in sim->tris. */
typedef struct wind_rec {
	uint32_t v[3];
	uint32_t t;
} wind_rec;

static uint32_t min3(const uint32_t *v)
{
	uint32_t m = v[0] < v[1] ? v[0] : v[1];
	return m < v[2] ? m : v[2];
}

static int wind_rec_cmp(const void *a, const void *b)
{
	const wind_rec *x = a, *y = b;
	uint32_t mx = min3(x->v), my = min3(y->v);
	if (mx != my)
		return mx < my ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

/*
 * The wind pass's order (sim->wind_chunk, wind_col; see internal.h): the
 * triangles with a rest area, sorted by their lowest vertex, cut into
 * chunks of SIM_WIND_CHUNK consecutive triangles, and the chunks greedily
 * coloured so that no two chunks of one colour share a vertex. A chunk is
 * one thread's serial work, so each thread walks a compact part of the
 * vertex arrays. sim->tris and tri_rest_area are permuted into that order
 * (the zero-area triangles after the others), so the pass reads them
 * forwards: through an index array it was slower on one thread than the
 * serial loop it replaced. Chunks whose vertices already use 63 colours go
 * to the overflow colour, run serially. Without colouring
 * (SIM_CREATE_NATURAL) the triangles keep their input order as one serial
 * chunk, the plain reference's order. mask is scratch.
 */
static drape_err wind_order(drape_sim *sim, uint64_t *mask)
{
	const uint32_t nt = sim->ntri;
	uint32_t m = 0;
	for (uint32_t t = 0; t < nt; t++)
		m += sim->tri_rest_area[t] > 0.0f;
	const int natural = (sim->flags & SIM_CREATE_NATURAL) != 0;
	const uint32_t chunks = natural ? 0u : (m + SIM_WIND_CHUNK - 1) / SIM_WIND_CHUNK;
	sim->wind_chunks = chunks;
	sim->wind_chunk = malloc(((size_t)chunks + 1) * sizeof *sim->wind_chunk);
	if (sim->wind_chunk == NULL)
		return DRAPE_ENOMEM;
	if (natural) {
		/* Every triangle in input order, one serial chunk; the pass
		 * skips the zero-area ones itself. */
		sim->wind_chunks = 1;
		sim->wind_chunk = realloc(sim->wind_chunk, 2 * sizeof *sim->wind_chunk);
		if (sim->wind_chunk == NULL)
			return DRAPE_ENOMEM;
		sim->wind_chunk[0] = 0;
		sim->wind_chunk[1] = nt;
		return serial_group(1, &sim->wind_col);
	}
	wind_rec *r = malloc((size_t)(nt ? nt : 1) * sizeof *r);
	uint8_t *colour = malloc(chunks ? chunks : 1);
	uint32_t *slot = malloc((chunks ? chunks : 1) * sizeof *slot);
	float *area = malloc((size_t)(nt ? nt : 1) * sizeof *area);
	sim->wind_col.start = calloc(SIM_MAX_COLOURS + 1, sizeof *sim->wind_col.start);
	if (r == NULL || colour == NULL || slot == NULL || area == NULL || sim->wind_col.start == NULL) {
		free(r);
		free(colour);
		free(slot);
		free(area);
		return DRAPE_ENOMEM;
	}
	/* The wind's triangles first, sorted; the zero-area ones after. */
	uint32_t k0 = 0, k1 = m;
	for (uint32_t t = 0; t < nt; t++) {
		const uint32_t *v = &sim->tris[3 * (size_t)t];
		r[sim->tri_rest_area[t] > 0.0f ? k0++ : k1++] = (wind_rec){{v[0], v[1], v[2]}, t};
	}
	qsort(r, m, sizeof *r, wind_rec_cmp);
	memset(mask, 0, (size_t)sim->n * sizeof *mask);
	uint32_t used = 0, *count = sim->wind_col.start + 1;
	for (uint32_t k = 0; k < chunks; k++) {
		uint32_t b = k * SIM_WIND_CHUNK, e = b + SIM_WIND_CHUNK < m ? b + SIM_WIND_CHUNK : m;
		uint64_t busy = 0;
		for (uint32_t i = b; i < e; i++)
			busy |= mask[r[i].v[0]] | mask[r[i].v[1]] | mask[r[i].v[2]];
		uint32_t c = 0;
		while (c < SIM_OVERFLOW_COLOUR && (busy >> c & 1u))
			c++;
		if (c == SIM_OVERFLOW_COLOUR)
			sim->wind_col.overflow = 1;
		else
			for (uint32_t i = b; i < e; i++)
				for (int j = 0; j < 3; j++)
					mask[r[i].v[j]] |= UINT64_C(1) << c;
		colour[k] = (uint8_t)c;
		count[c]++;
		used = c + 1 > used ? c + 1 : used;
	}
	/* Chunks in colour order (stable), their triangles with them. */
	uint32_t *start = sim->wind_col.start;
	for (uint32_t c = 0; c < SIM_MAX_COLOURS; c++)
		start[c + 1] += start[c];
	uint32_t fill[SIM_MAX_COLOURS];
	memcpy(fill, start, sizeof fill);
	for (uint32_t k = 0; k < chunks; k++)
		slot[fill[colour[k]]++] = k;
	uint32_t out = 0;
	for (uint32_t s = 0; s < chunks; s++) {
		uint32_t k = slot[s], b = k * SIM_WIND_CHUNK, e = b + SIM_WIND_CHUNK < m ? b + SIM_WIND_CHUNK : m;
		sim->wind_chunk[s] = out;
		for (uint32_t i = b; i < e; i++, out++) {
			memcpy(&sim->tris[3 * (size_t)out], r[i].v, sizeof r[i].v);
			area[out] = sim->tri_rest_area[r[i].t];
		}
	}
	sim->wind_chunk[chunks] = out;
	for (uint32_t i = m; i < nt; i++) {
		memcpy(&sim->tris[3 * (size_t)i], r[i].v, sizeof r[i].v);
		area[i] = sim->tri_rest_area[r[i].t];
	}
	memcpy(sim->tri_rest_area, area, (size_t)nt * sizeof *area);
	sim->wind_col.colours = used;
	sim->wind_col.overflow = sim->wind_col.overflow && used == SIM_MAX_COLOURS;
	free(slot);
	free(r);
	free(colour);
	free(area);
	return DRAPE_OK;
}

drape_err sim_topology_build(drape_sim *sim, drape_error *err)
{
	const uint32_t n = sim->n, nt = sim->ntri;
	const uint32_t *tri = sim->tris;
	const sim_vec4 *x = sim->x;
	drape_sim_topology *topo = &sim->topo;
	memset(topo, 0, sizeof *topo);
	topo->vertices = n;
	topo->triangles = nt;

	/* Rest areas; slivers count as zero-area. */
	for (uint32_t t = 0; t < nt; t++) {
		sim_v3 a = v3_of4(x[tri[3 * t]]), b = v3_of4(x[tri[3 * t + 1]]),
		       c = v3_of4(x[tri[3 * t + 2]]);
		sim_v3 ab = v3_sub(b, a), ac = v3_sub(c, a), bc = v3_sub(c, b);
		float twice = v3_len(v3_cross(ab, ac));
		float longest = fmaxf(v3_dot(ab, ab), fmaxf(v3_dot(ac, ac), v3_dot(bc, bc)));
		if (!(twice > SIM_SLIVER_RATIO * longest) || !isfinite(twice)) {
			sim->tri_rest_area[t] = 0.0f;
			topo->zero_area_triangles++;
		} else {
			sim->tri_rest_area[t] = 0.5f * twice;
		}
	}

	size_t nh = (size_t)nt * 3;
	half_edge *he = malloc(nh * sizeof *he);
	uint64_t *mask = malloc((size_t)n * sizeof *mask);
	if (he == NULL || mask == NULL) {
		free(he);
		free(mask);
		return drape_error_setf(err, DRAPE_ENOMEM, "topology: cannot allocate %zu half-edges", nh);
	}
	for (uint32_t t = 0; t < nt; t++)
		for (uint32_t j = 0; j < 3; j++) {
			uint32_t a = tri[3 * t + j], b = tri[3 * t + (j + 1) % 3];
			uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
			he[3 * (size_t)t + j] = (half_edge){((uint64_t)lo << 32) | hi, 3 * t + j};
		}
	qsort(he, nh, sizeof *he, half_edge_cmp);

	/* First pass: count so each array is allocated once at its size. */
	uint32_t edges = 0, pairs = 0;
	for (size_t i = 0; i < nh;) {
		size_t j = i + 1;
		while (j < nh && he[j].key == he[i].key)
			j++;
		edges++;
		if (j - i == 1)
			topo->boundary_edges++;
		else if (j - i == 2)
			pairs++;
		else
			topo->nonmanifold_edges++;
		i = j;
	}
	sim->stretch = malloc((edges ? edges : 1) * sizeof *sim->stretch);
	sim->shear = malloc((pairs ? pairs : 1) * sizeof *sim->shear);
	sim->bend = malloc((pairs ? pairs : 1) * sizeof *sim->bend);
	if (sim->stretch == NULL || sim->shear == NULL || sim->bend == NULL) {
		free(he);
		free(mask);
		return drape_error_setf(err, DRAPE_ENOMEM, "topology: cannot allocate constraints");
	}

	uint32_t ns = 0, nsh = 0, nb = 0;
	for (size_t i = 0; i < nh;) {
		size_t j = i + 1;
		while (j < nh && he[j].key == he[i].key)
			j++;
		uint32_t a = (uint32_t)(he[i].key >> 32), b = (uint32_t)he[i].key;
		float rest = dist3(x[a], x[b]);
		if (rest > SIM_MIN_REST_LENGTH)
			sim->stretch[ns++] = (sim_dist){a, b, rest};
		else
			topo->degenerate_edges++;
		if (j - i == 2) {
			uint32_t t0 = he[i].id / 3, t1 = he[i + 1].id / 3;
			uint32_t c = tri[3 * t0 + (he[i].id % 3 + 2) % 3];
			uint32_t d = tri[3 * t1 + (he[i + 1].id % 3 + 2) % 3];
			/* Two copies of the same triangle have the same wing:
			 * no dihedral and no wing distance exist. */
			if (c != d) {
				uint32_t lo = c < d ? c : d, hi = c < d ? d : c;
				float wing = dist3(x[lo], x[hi]);
				if (wing > SIM_MIN_REST_LENGTH)
					sim->shear[nsh++] = (sim_dist){lo, hi, wing};
				if (sim->tri_rest_area[t0] > 0.0f && sim->tri_rest_area[t1] > 0.0f) {
					sim_bend *r = &sim->bend[nb++];
					r->v[0] = a;
					r->v[1] = b;
					r->v[2] = lo;
					r->v[3] = hi;
					r->rest = sim_bend_rest_angle(v3_of4(x[a]), v3_of4(x[b]),
								      v3_of4(x[lo]), v3_of4(x[hi]));
				}
			}
		}
		i = j;
	}
	free(he);
	sim->stretch_count = ns;
	sim->shear_count = nsh;
	sim->bend_count = nb;
	topo->edges = edges;
	topo->bends = nb;

	/* Stretch and bend records come out sorted by their shared edge; the
	 * shear records are sorted by their wing pair here. */
	qsort(sim->shear, nsh, sizeof *sim->shear, dist_cmp);

	/* Unreferenced vertices, using the mask array as scratch flags. */
	memset(mask, 0, (size_t)n * sizeof *mask);
	for (size_t i = 0; i < nh; i++)
		mask[tri[i]] = 1;
	for (uint32_t i = 0; i < n; i++)
		topo->unreferenced_vertices += mask[i] == 0;

	drape_err rc;
	if (sim->flags & SIM_CREATE_NATURAL) {
		rc = serial_group(ns, &sim->stretch_col);
		if (rc == DRAPE_OK)
			rc = serial_group(nb, &sim->bend_col);
		if (rc == DRAPE_OK)
			rc = serial_group(nsh, &sim->shear_col);
		if (rc == DRAPE_OK)
			rc = wind_order(sim, mask);
		free(mask);
		if (rc != DRAPE_OK)
			return drape_error_setf(err, rc, "topology: cannot allocate colour groups");
		topo->colours = 0;
		return DRAPE_OK;
	}
	/* Tiles of the locality order, each coloured Box2D v3-style
	 * (constraint_graph.c): greedy in record order, so each colour keeps
	 * the records sorted by vertex and walks the positions forwards. */
	const uint32_t tv = sim_tile_vertices(n);
	const uint32_t tiles = (n + tv - 1) / tv;
	sim->tiles = tiles;
	sim->tile_vertices = tv;
	rc = tile_records(sim->stretch, sizeof *sim->stretch, ns, 2, mask, n, tiles, tv,
			  &sim->stretch_tiles, &sim->stretch_col);
	if (rc == DRAPE_OK)
		rc = tile_records(sim->bend, sizeof *sim->bend, nb, 4, mask, n, tiles, tv,
				  &sim->bend_tiles, &sim->bend_col);
	if (rc == DRAPE_OK)
		rc = tile_records(sim->shear, sizeof *sim->shear, nsh, 2, mask, n, tiles, tv,
				  &sim->shear_tiles, &sim->shear_col);
	if (rc == DRAPE_OK)
		rc = wind_order(sim, mask);
	free(mask);
	if (rc != DRAPE_OK)
		return drape_error_setf(err, rc, "topology: cannot allocate colour groups");
	topo->colours = tiled_colours(&sim->stretch_tiles, tiles, &sim->stretch_col) +
			tiled_colours(&sim->bend_tiles, tiles, &sim->bend_col) +
			tiled_colours(&sim->shear_tiles, tiles, &sim->shear_col);
	return DRAPE_OK;
}

/* A binary min-heap entry of the Dijkstra search. */
typedef struct heap_item {
	double dist;
	uint32_t vertex;
} heap_item;

/* Orders by distance, then by vertex, so the search is deterministic. */
static int heap_less(heap_item a, heap_item b)
{
	return a.dist < b.dist || (a.dist == b.dist && a.vertex < b.vertex);
}

static void heap_push(heap_item *h, size_t *n, heap_item it)
{
	size_t i = (*n)++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!heap_less(it, h[up]))
			break;
		h[i] = h[up];
		i = up;
	}
	h[i] = it;
}

static heap_item heap_pop(heap_item *h, size_t *n)
{
	heap_item top = h[0], last = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && heap_less(h[c + 1], h[c]))
			c++;
		if (!heap_less(h[c], last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

drape_err sim_lra_build(drape_sim *sim, drape_error *err)
{
	const uint32_t n = sim->n, ne = sim->stretch_count;
	uint32_t pins = 0;
	for (uint32_t i = 0; i < n; i++)
		pins += sim->x[i].w == 0.0f && !sim_weld_follower(sim, i);
	sim->lra = NULL;
	sim->lra_count = 0;
	if (pins == 0 || pins == n)
		return DRAPE_OK;

	/* Adjacency in compressed rows: off[i]..off[i+1] index nbr. */
	uint32_t *off = calloc((size_t)n + 1, sizeof *off);
	uint32_t *nbr = malloc(2 * (size_t)(ne ? ne : 1) * sizeof *nbr);
	float *len = malloc(2 * (size_t)(ne ? ne : 1) * sizeof *len);
	double *dist = malloc((size_t)n * sizeof *dist);
	uint32_t *src = malloc((size_t)n * sizeof *src);
	/* Lazy deletion pushes at most once per pin plus once per relaxation. */
	heap_item *heap = malloc(((size_t)pins + 2 * (size_t)ne) * sizeof *heap);
	drape_err rc = DRAPE_OK;
	if (!off || !nbr || !len || !dist || !src || !heap) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "long-range attachments: out of memory");
		goto done;
	}
	for (uint32_t e = 0; e < ne; e++) {
		off[sim->stretch[e].a + 1]++;
		off[sim->stretch[e].b + 1]++;
	}
	for (uint32_t i = 0; i < n; i++)
		off[i + 1] += off[i];
	/* src doubles as the fill cursor before the search uses it. */
	memcpy(src, off, (size_t)n * sizeof *src);
	for (uint32_t e = 0; e < ne; e++) {
		const sim_dist *c = &sim->stretch[e];
		nbr[src[c->a]] = c->b;
		len[src[c->a]++] = c->rest;
		nbr[src[c->b]] = c->a;
		len[src[c->b]++] = c->rest;
	}
	size_t hn = 0;
	for (uint32_t i = 0; i < n; i++) {
		dist[i] = HUGE_VAL;
		src[i] = UINT32_MAX;
		if (sim->x[i].w == 0.0f && !sim_weld_follower(sim, i)) {
			dist[i] = 0.0;
			src[i] = i;
			heap_push(heap, &hn, (heap_item){0.0, i});
		}
	}
	while (hn > 0) {
		heap_item it = heap_pop(heap, &hn);
		if (it.dist > dist[it.vertex])
			continue;
		for (uint32_t k = off[it.vertex]; k < off[it.vertex + 1]; k++) {
			double d = it.dist + len[k];
			uint32_t j = nbr[k];
			if (d < dist[j]) {
				dist[j] = d;
				src[j] = src[it.vertex];
				heap_push(heap, &hn, (heap_item){d, j});
			}
		}
	}
	uint32_t count = 0;
	for (uint32_t i = 0; i < n; i++)
		count += sim->x[i].w != 0.0f && src[i] != UINT32_MAX;
	sim->lra = malloc((count ? count : 1) * sizeof *sim->lra);
	if (sim->lra == NULL) {
		rc = drape_error_setf(err, DRAPE_ENOMEM, "long-range attachments: out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < n; i++)
		if (sim->x[i].w != 0.0f && src[i] != UINT32_MAX)
			sim->lra[sim->lra_count++] = (sim_dist){i, src[i], (float)dist[i]};
	sim->topo.long_range = sim->lra_count;
	/* The attachments form one colour of their own (see internal.h). */
	if (sim->lra_count > 0)
		sim->topo.colours++;
done:
	free(off);
	free(nbr);
	free(len);
	free(dist);
	free(src);
	free(heap);
	return rc;
}
