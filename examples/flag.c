/*
 * The interim demo (issue 2): a 64 x 64 sheet pinned along its top edge,
 * a hanging flag in wind, 120 frames at 24 fps through the embeddable solver. Each
 * frame is written as a Wavefront OBJ file (out/demo/frame_0001.obj, ...),
 * then a short summary is printed: vertices, frames, ms per frame, strain.
 *
 *     build/examples/flag [output-directory]
 */
#include "drape/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { NX = 64, NY = 64, FRAMES = 120 };

/* mkdir -p for a relative or absolute path. */
static int make_dirs(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		buf[i] = c;
	}
	return 0;
}

static int write_obj(const char *dir, uint32_t frame, const float *x, uint32_t nv,
		     const uint32_t *tri, uint32_t nt)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/frame_%04u.obj", dir, frame);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "flag: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "# drape flag demo, frame %u\n", frame);
	for (uint32_t i = 0; i < nv; i++)
		fprintf(f, "v %.6f %.6f %.6f\n", (double)x[3 * i], (double)x[3 * i + 1],
			(double)x[3 * i + 2]);
	for (uint32_t t = 0; t < nt; t++)
		fprintf(f, "f %u %u %u\n", tri[3 * t] + 1, tri[3 * t + 1] + 1, tri[3 * t + 2] + 1);
	if (fclose(f) != 0) {
		fprintf(stderr, "flag: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "out/demo";
	if (make_dirs(dir) != 0) {
		fprintf(stderr, "flag: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}

	/* A 1 m x 1 m sheet in the x-y plane, hanging from its top edge (a
	 * banner on a horizontal pole), vertex (i, j) at index j * NX + i. */
	const uint32_t nv = NX * NY, nt = 2 * (NX - 1) * (NY - 1);
	float *pos = malloc((size_t)nv * 3 * sizeof *pos);
	float *x = malloc((size_t)nv * 3 * sizeof *x);
	uint32_t *tri = malloc((size_t)nt * 3 * sizeof *tri);
	uint32_t pins[NX];
	if (pos == NULL || x == NULL || tri == NULL) {
		fprintf(stderr, "flag: out of memory\n");
		return 1;
	}
	for (uint32_t j = 0; j < NY; j++)
		for (uint32_t i = 0; i < NX; i++) {
			float *p = &pos[3 * (j * NX + i)];
			p[0] = (float)i / (NX - 1);
			p[1] = 2.0f - 1.0f * (float)j / (NY - 1);
			p[2] = 0.0f;
		}
	uint32_t t = 0;
	for (uint32_t j = 0; j + 1 < NY; j++)
		for (uint32_t i = 0; i + 1 < NX; i++) {
			uint32_t a = j * NX + i, b = a + 1, c = a + NX, d = c + 1;
			uint32_t *q = &tri[3 * t];
			/* Alternate the diagonal so the cloth has no preferred shear. */
			if ((i + j) % 2) {
				q[0] = a, q[1] = b, q[2] = d, q[3] = a, q[4] = d, q[5] = c;
			} else {
				q[0] = a, q[1] = b, q[2] = c, q[3] = b, q[4] = d, q[5] = c;
			}
			t += 2;
		}
	for (uint32_t i = 0; i < NX; i++)
		pins[i] = i;

	drape_sim_desc desc;
	drape_sim_desc_default(&desc);
	desc.positions = pos;
	desc.vertex_count = nv;
	desc.triangles = tri;
	desc.triangle_count = nt;
	desc.pins = pins;
	desc.pin_count = NX;
	/* A breeze mostly across the sheet and partly along it: drag billows
	 * it downwind, lift and the changing angle of attack make it flap. */
	desc.params.wind[0] = 1.0f;
	desc.params.wind[2] = 3.0f;

	drape_sim *sim = NULL;
	drape_error err;
	if (drape_sim_create(&desc, &sim, &err) != DRAPE_OK) {
		fprintf(stderr, "flag: %s\n", err.message);
		return 1;
	}
	drape_sim_topology topo;
	drape_sim_get_topology(sim, &topo);
	double total_ms = 0.0;
	float max_strain = 0.0f, last_strain = 0.0f, last_mean = 0.0f;
	int rc = 0;
	for (uint32_t f = 1; f <= FRAMES; f++) {
		drape_sim_stats st;
		if (drape_sim_step(sim, &st, &err) != DRAPE_OK) {
			fprintf(stderr, "flag: frame %u: %s\n", f, err.message);
			rc = 1;
			break;
		}
		total_ms += st.solve_ms;
		max_strain = st.max_strain > max_strain ? st.max_strain : max_strain;
		last_strain = st.max_strain;
		last_mean = st.mean_strain;
		drape_sim_get_positions(sim, x);
		if (write_obj(dir, f, x, nv, tri, nt) != 0) {
			rc = 1;
			break;
		}
	}
	if (rc == 0) {
		drape_sim_params p;
		drape_sim_get_params(sim, &p);
		printf("drape flag demo (solver build: %s)\n", drape_sim_build());
		printf("  vertices      %u (%u triangles, %u edges, %u bends, %u pinned)\n", nv, nt,
		       topo.edges, topo.bends, topo.pinned_vertices);
		printf("  frames        %u at %g fps, %d substeps x %d iterations\n", FRAMES,
		       (double)p.fps, (int)p.substeps, (int)p.iterations);
		printf("  ms per frame  %.2f\n", total_ms / FRAMES);
		printf("  max strain    %.3f %% over all frames; last frame max %.3f %%, mean %.3f %%\n",
		       100.0 * max_strain, 100.0 * last_strain, 100.0 * last_mean);
		printf("  wrote         %s/frame_0001.obj .. frame_%04u.obj\n", dir, FRAMES);
	}
	drape_sim_destroy(sim);
	free(pos);
	free(x);
	free(tri);
	return rc;
}
