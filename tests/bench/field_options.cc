/*
 * Issue 22's measurement of OpenVDB's options for the body's field: what
 * each stage of meshToVolume costs on the MakeHuman body (27,300 triangles,
 * 5 mm voxels, as examples/garment.json has it), today's settings against
 * the alternatives, interleaved in one run so that the shared box's load
 * falls on all of them alike. Medians of ROUNDS builds per setting.
 *
 * Not part of `make bench` (which is C and never links OpenVDB directly):
 * build and run it from the repository root after `make`:
 *
 *   g++ -O2 -std=c++17 -Iinclude -I. tests/bench/field_options.cc -o build/field_options \
 *       build/libdrape.a build/libdrape_sim.a -lopenvdb -ltbb -lImath-3_1 -lcjson -lm -lpthread
 *   build/field_options 1; build/field_options 2      # OpenVDB's threads
 *
 * Settings: "today" is sdf_vdb.cc's (exterior band 5 voxels = the cloth's
 * 3 mm plus 2 cm, the whole interior filled, renormalised); "narrow
 * interior" keeps 5 voxels inside too; "no renormalise" is today's without
 * DISABLE_RENORMALIZATION's pass; "least" is the cheapest OpenVDB can do
 * at this voxel size (2 voxels either side, where it grows no band, and no
 * renormalisation), a floor for any setting.
 */
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>
#include <openvdb/util/NullInterrupter.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

extern "C" {
#include "client/obj.h"
#include "drape/sim.h"
}

namespace {

using clk = std::chrono::steady_clock;

/* The progress marks OpenVDB reports between its stages (sdf_vdb.cc's
 * StageClock does the same). */
struct Marks : openvdb::util::NullInterrupter {
	clk::time_point t0;
	double at[4] = {0, 0, 0, 0};
	bool wasInterrupted(int percent = -1) override
	{
		const int m[4] = {30, 54, 94, 99};
		for (int i = 0; i < 4; i++)
			if (percent == m[i] && at[i] == 0)
				at[i] = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
		return false;
	}
};

struct Setting {
	const char *name;
	float exterior, interior; /* voxels; interior < 0: the whole interior */
	int flags;
};

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
	if (threads < 1) {
		std::fprintf(stderr, "usage: %s THREADS\n", argv[0]);
		return 2;
	}
	tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(threads));
	drape_obj_mesh body;
	drape_error err;
	if (drape_obj_read_file("tests/data/meshes/mh_proxy_male_generic.obj", nullptr, &body, &err) !=
	    DRAPE_OK) {
		std::fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	const double voxel = 0.005;
	openvdb::initialize();
	openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(voxel);
	/* meshToVolume takes the points in index space (doMeshConversion's
	 * transform, done here once). */
	std::vector<openvdb::Vec3s> pts(body.vertex_count);
	for (uint32_t i = 0; i < body.vertex_count; i++)
		pts[i] = openvdb::Vec3s(xf->worldToIndex(openvdb::Vec3d(
			body.positions[3 * i] * 0.1, body.positions[3 * i + 1] * 0.1, body.positions[3 * i + 2] * 0.1)));
	std::vector<openvdb::Vec3I> tris(body.triangle_count);
	for (uint32_t t = 0; t < body.triangle_count; t++)
		tris[t] = openvdb::Vec3I(body.triangles[3 * t], body.triangles[3 * t + 1], body.triangles[3 * t + 2]);
	openvdb::tools::QuadAndTriangleDataAdapter<openvdb::Vec3s, openvdb::Vec3I> mesh(pts, tris);

	using namespace openvdb::tools;
	const Setting settings[] = {
		{"today", 5, -1, 0},
		{"narrow interior", 5, 5, 0},
		{"no renormalise", 5, -1, DISABLE_RENORMALIZATION},
		{"least", 2, 2, DISABLE_RENORMALIZATION},
	};
	constexpr int S = sizeof settings / sizeof settings[0], ROUNDS = 3;
	std::vector<double> total[S], stage[S][5];
	unsigned long long voxels[S] = {};
	for (int r = 0; r < ROUNDS; r++)
		for (int s = 0; s < S; s++) {
			const Setting &st = settings[s];
			Marks m;
			m.t0 = clk::now();
			openvdb::FloatGrid::Ptr g = meshToVolume<openvdb::FloatGrid>(
				m, mesh, *xf, st.exterior,
				st.interior < 0 ? std::numeric_limits<float>::max() : st.interior, st.flags, nullptr);
			const double t = std::chrono::duration<double, std::milli>(clk::now() - m.t0).count();
			total[s].push_back(t);
			double prev = 0;
			for (int i = 0; i < 4; i++) {
				stage[s][i].push_back(m.at[i] > 0 ? m.at[i] - prev : 0);
				if (m.at[i] > 0)
					prev = m.at[i];
			}
			stage[s][4].push_back(t - prev);
			voxels[s] = g->activeVoxelCount();
		}
	std::printf("body field options on %d thread(s), medians of %d, ms: total = voxelise + sign + "
		    "band/interior + renormalise + rest\n",
		    threads, ROUNDS);
	for (int s = 0; s < S; s++)
		std::printf("  %-16s %7.0f = %5.0f + %4.0f + %5.0f + %4.0f + %3.0f   %llu voxels\n",
			    settings[s].name, median(total[s]), median(stage[s][0]), median(stage[s][1]),
			    median(stage[s][2]), median(stage[s][3]), median(stage[s][4]), voxels[s]);
	drape_obj_free(&body);
	return 0;
}
