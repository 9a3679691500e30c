/*
 * Mesh collider fields: a narrow-band signed distance field behind the C
 * interface drape_sdf_* of include/drape/sim.h, held in an OpenVDB grid.
 * This is the solver's only C++ file; every C++ exception stops here and
 * becomes a drape_err with the exception's message.
 *
 * Builders. The exact builder (sdfband.c: exact distances near the
 * triangles, closest-triangle propagation beyond, pseudo-normal signs) runs
 * first, its stages on TBB's threads, and this file copies its voxels into
 * the grid. A mesh it cannot sign exactly (non-manifold after capping,
 * non-orientable, too large a dense grid) goes to OpenVDB's
 * tools::meshToSignedDistanceField, as all meshes did before; info.builder
 * says which ran. The two paragraphs below describe the OpenVDB builder;
 * both builders see the capped mesh.
 *
 * Sign (OpenVDB builder). OpenVDB classifies inside and outside by flood-filling the exterior
 * from the grid's boundary and by closest-point tests on the voxels the
 * surface crosses; it never reads triangle normals. A field can therefore not
 * come out inside-out, and inconsistent winding does not matter. What can go
 * wrong is an open mesh: the exterior fill leaks through any hole wider than a
 * voxel and the interior turns into "outside". Before voxelising we therefore
 * close every hole: each boundary loop (edges used by one triangle only,
 * joined at vertices with exactly two such edges) is capped by a fan around
 * its centroid. A mesh collider is thus always a solid; a boundary that does
 * not decompose into simple loops is left as it is, and whatever the fill
 * reaches then reads as free space, never as inside.
 *
 * Sampling is trilinear in world space from the eight voxel values around the
 * point, read through a ConstAccessor made for each call so that threads can
 * sample one field at once. The gradient is the exact gradient of that
 * trilinear interpolant (the same eight values, no extra lookups).
 *
 * Band. Outside the surface the field is narrow: beyond the exterior band
 * the tree holds its background and a point reads exactly +band with a zero
 * gradient (free space). Inside, the whole interior is filled (OpenVDB's
 * interior band set to the float maximum), so a vertex that moved deeper
 * than any band in one substep still reads its true depth and the direction
 * out; the interior of a body costs at most its volume in voxels, which the
 * bounding-box cap below already counts.
 */
#include <openvdb/openvdb.h>
#include <openvdb/io/Stream.h>
#include <openvdb/tools/MeshToVolume.h>
#include <openvdb/util/NullInterrupter.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "drape/sim.h"
#include "server/sim/sdfband.h"
}

struct drape_sdf {
	std::atomic<uint32_t> refs;
	openvdb::FloatGrid::Ptr grid;
	drape_sdf_info info;
};

namespace {

/* Automatic voxel size: this fraction of the bounding-box diagonal. */
constexpr double kAutoVoxelDivisions = 256.0;
/* The narrow band is never thinner than this many voxels either side, so the
 * trilinear stencil around a surface point is always inside it. */
constexpr int kMinBandVoxels = 3;
/* The exact builder (sdfband.c) stores 8^3 bricks on demand, but reserves
 * (untouched) room for a brick in every cell of the box, about 8.5 bytes a
 * voxel of address space, and keeps per-row tables of the box: a box of
 * more voxels than this goes to OpenVDB's sparse builder. */
constexpr uint64_t kMaxDenseVoxels = 24000000;

std::once_flag g_vdb_once;

/*
 * Times meshToVolume's stages. OpenVDB reports its progress through the
 * interrupter from the calling thread between its parallel stages: 30 after
 * the voxelisation, 54 after the sign flood fill, 54 and up while the band
 * grows, 94 after it, 99 after the renormalisation. The calls without a
 * percentage come from its worker threads, once per triangle; they only
 * ask whether to stop and touch nothing here.
 */
class StageClock : public openvdb::util::NullInterrupter {
public:
	using clock = std::chrono::steady_clock;
	explicit StageClock(clock::time_point t0) : t0_(t0), at_{} {}
	bool wasInterrupted(int percent = -1) override
	{
		const int marks[4] = {30, 54, 94, 99};
		for (int i = 0; i < 4; i++)
			if (percent == marks[i] && at_[i] == 0)
				at_[i] = std::chrono::duration<double, std::milli>(clock::now() - t0_).count();
		return false;
	}
	/* The stages' durations from the marks seen (0 for a stage skipped). */
	void stages(drape_sdf_info &info, double start_ms) const
	{
		double prev = start_ms, *out[4] = {&info.voxelize_ms, &info.sign_ms, &info.expand_ms,
						   &info.renormalize_ms};
		for (int i = 0; i < 4; i++) {
			*out[i] = at_[i] > 0 ? at_[i] - prev : 0;
			if (at_[i] > 0)
				prev = at_[i];
		}
	}

private:
	clock::time_point t0_;
	double at_[4];
};

void vdb_init() { std::call_once(g_vdb_once, [] { openvdb::initialize(); }); }

/* Dense voxel count of the bounding box grown by the band on every side: an
 * upper bound on the narrow band's size that costs nothing to compute. */
double implied_voxels(const double ext[3], double voxel, int band_voxels)
{
	double n = 1.0;
	for (int k = 0; k < 3; k++)
		n *= std::floor(ext[k] / voxel) + 2.0 * band_voxels + 2.0;
	return n;
}

int band_voxels_for(double band, double voxel)
{
	double b = std::ceil(band / voxel - 1e-6);
	if (!(b >= kMinBandVoxels))
		return kMinBandVoxels;
	/* A band wider than this is caught by the voxel cap anyway. */
	return b > 1e6 ? 1000000 : static_cast<int>(b);
}

/*
 * Closes the holes of an open mesh by a fan from each boundary loop to the
 * loop's centroid (see the file comment). Appends to points and tris; returns
 * the number of loops capped.
 */
uint32_t cap_holes(std::vector<openvdb::Vec3s> &points, std::vector<openvdb::Vec3I> &tris)
{
	const size_t ntri = tris.size();
	/* Vertices at exactly the same position are one vertex here: exporters
	 * split positions along UV seams and flat-shaded faces, and those seams
	 * are not holes. Each vertex maps to the lowest index at its position. */
	std::vector<uint32_t> order(points.size()), canon(points.size());
	for (uint32_t i = 0; i < order.size(); i++)
		order[i] = i;
	auto less = [&points](uint32_t a, uint32_t b) {
		const openvdb::Vec3s &p = points[a], &q = points[b];
		if (p.x() != q.x())
			return p.x() < q.x();
		if (p.y() != q.y())
			return p.y() < q.y();
		if (p.z() != q.z())
			return p.z() < q.z();
		return a < b;
	};
	std::sort(order.begin(), order.end(), less);
	for (size_t i = 0; i < order.size(); i++)
		canon[order[i]] = (i > 0 && points[order[i]] == points[order[i - 1]]) ? canon[order[i - 1]]
										       : order[i];
	std::vector<uint64_t> edges;
	edges.reserve(ntri * 3);
	for (size_t t = 0; t < ntri; t++) {
		for (int k = 0; k < 3; k++) {
			uint64_t a = canon[tris[t][k]], b = canon[tris[t][(k + 1) % 3]];
			if (a == b)
				continue;
			edges.push_back(std::min(a, b) << 32 | std::max(a, b));
		}
	}
	std::sort(edges.begin(), edges.end());
	/* Boundary edges as (vertex, neighbour) in both directions, sorted by vertex. */
	std::vector<std::pair<uint32_t, uint32_t>> adj;
	for (size_t i = 0; i < edges.size();) {
		size_t j = i;
		while (j < edges.size() && edges[j] == edges[i])
			j++;
		if (j - i == 1) {
			uint32_t a = static_cast<uint32_t>(edges[i] >> 32), b = static_cast<uint32_t>(edges[i]);
			adj.emplace_back(a, b);
			adj.emplace_back(b, a);
		}
		i = j;
	}
	if (adj.empty())
		return 0;
	std::sort(adj.begin(), adj.end());
	/* Index of each boundary vertex's first record and its degree. */
	auto first_of = [&adj](uint32_t v) {
		return std::lower_bound(adj.begin(), adj.end(), std::make_pair(v, uint32_t(0))) - adj.begin();
	};
	auto degree_of = [&adj](size_t at) {
		size_t d = 0;
		while (at + d < adj.size() && adj[at + d].first == adj[at].first)
			d++;
		return d;
	};
	std::vector<char> used(adj.size(), 0);
	std::vector<uint32_t> loop;
	uint32_t capped = 0;
	for (size_t s = 0; s < adj.size(); s++) {
		if (used[s] || degree_of(static_cast<size_t>(first_of(adj[s].first))) != 2)
			continue;
		const uint32_t start = adj[s].first;
		uint32_t prev = start, cur = adj[s].second;
		/* Both of the start's records: marking only the one walked
		 * capped every loop twice, once from each direction (harmless
		 * to OpenVDB's voxeliser, a non-manifold edge to the exact
		 * builder). */
		const size_t s0 = static_cast<size_t>(first_of(start));
		used[s0] = used[s0 + 1] = 1;
		loop.assign(1, start);
		bool simple = true;
		while (cur != start) {
			size_t at = static_cast<size_t>(first_of(cur));
			if (degree_of(at) != 2 || loop.size() > adj.size()) {
				simple = false;
				break;
			}
			loop.push_back(cur);
			size_t next = adj[at].second == prev ? at + 1 : at;
			used[at] = used[at + 1] = 1;
			prev = cur;
			cur = adj[next].second;
		}
		if (!simple || loop.size() < 3)
			continue;
		openvdb::Vec3d c(0.0);
		for (uint32_t v : loop)
			c += openvdb::Vec3d(points[v]);
		c /= static_cast<double>(loop.size());
		const uint32_t centre = static_cast<uint32_t>(points.size());
		points.emplace_back(static_cast<float>(c.x()), static_cast<float>(c.y()),
				    static_cast<float>(c.z()));
		for (size_t i = 0; i < loop.size(); i++)
			tris.emplace_back(loop[i], loop[(i + 1) % loop.size()], centre);
		capped++;
	}
	return capped;
}

drape_err validate_mesh(const float *vertices, uint32_t vertex_count, const uint32_t *triangles,
			uint32_t triangle_count, float voxel_size, float band, drape_error *err)
{
	if (vertices == nullptr || vertex_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "vertices: empty mesh (no vertices)");
	if (triangles == nullptr || triangle_count == 0)
		return drape_error_setf(err, DRAPE_EINVAL, "triangles: empty mesh (no triangles)");
	for (uint64_t i = 0; i < uint64_t(vertex_count) * 3; i++)
		if (!std::isfinite(vertices[i]))
			return drape_error_setf(err, DRAPE_ENONFINITE, "vertices[%llu][%d]: not finite",
						(unsigned long long)(i / 3), int(i % 3));
	for (uint64_t i = 0; i < uint64_t(triangle_count) * 3; i++)
		if (triangles[i] >= vertex_count)
			return drape_error_setf(err, DRAPE_ERANGE,
						"triangles[%llu][%d]: vertex index %u >= vertex count %u",
						(unsigned long long)(i / 3), int(i % 3), triangles[i],
						vertex_count);
	if (!std::isfinite(voxel_size) || voxel_size < 0)
		return drape_error_setf(err, DRAPE_EINVAL, "voxel_size: %g is not a finite number >= 0",
					double(voxel_size));
	if (!std::isfinite(band) || band < 0)
		return drape_error_setf(err, DRAPE_EINVAL, "band: %g is not a finite number >= 0",
					double(band));
	return DRAPE_OK;
}

double ms_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/*
 * The exact builder (sdfband.h): distances and signs computed in C in
 * 8^3 bricks over TBB's threads, then copied into an OpenVDB tree for the
 * sampling path, the cache format and every reader unchanged. Active
 * voxels: the exterior band (distance below bw voxels) and the whole
 * interior, as the OpenVDB builder gives; every interior voxel is active,
 * so no inactive value needs a sign flood fill. Returns nullptr with why
 * filled when the mesh needs the OpenVDB builder.
 */
openvdb::FloatGrid::Ptr build_band(const std::vector<openvdb::Vec3s> &points,
				   const std::vector<openvdb::Vec3I> &tris, double voxel, int bw,
				   drape_sdf_info &info, std::string &why)
{
	auto t0 = std::chrono::steady_clock::now();
	sim_sdfband b;
	char msg[256];
	static_assert(sizeof(openvdb::Vec3s) == 3 * sizeof(float), "packed points");
	static_assert(sizeof(openvdb::Vec3I) == 3 * sizeof(uint32_t), "packed triangles");
	if (sim_sdfband_prepare(&b, points[0].asPointer(), uint32_t(points.size()), tris[0].asPointer(),
				uint32_t(tris.size()), voxel, bw, kMaxDenseVoxels, msg, sizeof msg) != 0) {
		why = msg;
		return nullptr;
	}
	struct guard {
		sim_sdfband *b;
		~guard() { sim_sdfband_free(b); }
	} g{&b};
	info.sign_ms = ms_since(t0);
	auto t1 = std::chrono::steady_clock::now();
	tbb::parallel_for(tbb::blocked_range<uint32_t>(0, b.slabs, 1),
			  [&b](const tbb::blocked_range<uint32_t> &r) { sim_sdfband_shell(&b, r.begin(), r.end()); });
	info.voxelize_ms = ms_since(t1);
	auto t2 = std::chrono::steady_clock::now();
	sim_sdfband_begin_layers(&b);
	for (;;) {
		const uint32_t n = sim_sdfband_plan(&b);
		tbb::parallel_for(tbb::blocked_range<uint32_t>(0, n, 64),
				  [&b](const tbb::blocked_range<uint32_t> &r) { sim_sdfband_front(&b, r.begin(), r.end()); });
		const uint32_t m = sim_sdfband_settle(&b);
		if (m == 0)
			break;
		tbb::parallel_for(tbb::blocked_range<uint32_t>(0, m, 4),
				  [&b](const tbb::blocked_range<uint32_t> &r) { sim_sdfband_layer(&b, r.begin(), r.end()); });
	}
	info.expand_ms = ms_since(t2);
	auto t3 = std::chrono::steady_clock::now();
	const float background = float(bw * voxel);
	openvdb::FloatGrid::Ptr grid = openvdb::FloatGrid::create(background);
	grid->setTransform(openvdb::math::Transform::createLinearTransform(voxel));
	grid->setGridClass(openvdb::GRID_LEVEL_SET);
	/* The tree leaf by leaf: each brick of the builder is an 8^3 leaf
	 * (aligned alike), built on any thread (kept voxels set and active,
	 * the rest background and inactive, as a leaf that setValue creates
	 * holds them; none for a brick without a kept voxel), then the leaves
	 * are inserted serially in a fixed order. The tree is the one that
	 * setting the voxels one at a time gives. */
	using Leaf = openvdb::FloatTree::LeafNodeType;
	static_assert(Leaf::DIM == 8 && Leaf::LOG2DIM == 3, "8^3 leaves, offset (x * 8 + y) * 8 + z");
	std::vector<std::unique_ptr<Leaf>> leaves(b.nbricks);
	tbb::parallel_for(tbb::blocked_range<uint32_t>(0, b.nbricks, 16), [&](const tbb::blocked_range<uint32_t> &r) {
		for (uint32_t n = r.begin(); n < r.end(); n++) {
			uint64_t keep[8], any = 0;
			sim_sdfband_keep_mask(&b, n, keep);
			for (int x = 0; x < 8; x++)
				any |= keep[x];
			if (any == 0)
				continue;
			const sim_sdfband_brick &k = b.bricks[n];
			leaves[n].reset(new Leaf(openvdb::Coord(b.leaf_org[0] + 8 * k.c[0], b.leaf_org[1] + 8 * k.c[1],
								b.leaf_org[2] + 8 * k.c[2]),
						 background, false));
			Leaf *leaf = leaves[n].get();
			for (int x = 0; x < 8; x++)
				for (uint64_t bits = keep[x]; bits != 0; bits &= bits - 1) {
					const openvdb::Index v = openvdb::Index(x * 64 + __builtin_ctzll(bits));
					leaf->setValueOn(v, k.dist[v]);
				}
		}
	});
	for (std::unique_ptr<Leaf> &leaf : leaves)
		if (leaf)
			grid->tree().addLeaf(leaf.release());
	info.renormalize_ms = ms_since(t3);
	std::snprintf(info.builder, sizeof info.builder, "band (%u pieces, %u triangles reoriented)",
		      b.pieces, b.flipped);
	return grid;
}

drape_err build(const float *vertices, uint32_t vertex_count, const uint32_t *triangles,
		uint32_t triangle_count, float voxel_size, float band, uint64_t max_voxels,
		drape_sdf **out, drape_error *err)
{
	auto t_start = std::chrono::steady_clock::now();
	drape_err rc = validate_mesh(vertices, vertex_count, triangles, triangle_count, voxel_size,
				     band, err);
	if (rc != DRAPE_OK)
		return rc;
	if (max_voxels == 0)
		max_voxels = DRAPE_SDF_DEFAULT_MAX_VOXELS;

	double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
	for (uint32_t i = 0; i < vertex_count; i++)
		for (int k = 0; k < 3; k++) {
			lo[k] = std::min(lo[k], double(vertices[i * 3 + k]));
			hi[k] = std::max(hi[k], double(vertices[i * 3 + k]));
		}
	double ext[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
	double diag = std::sqrt(ext[0] * ext[0] + ext[1] * ext[1] + ext[2] * ext[2]);
	if (!(diag > 0) || !std::isfinite(diag))
		return drape_error_setf(err, DRAPE_EINVAL, "vertices: the mesh has zero extent");

	/* The voxel cap is checked here, on the bounding box, before anything
	 * is allocated: a client must not be able to make us voxelise 10^12
	 * voxels. An automatic voxel size grows until the box fits the cap. */
	double voxel = voxel_size;
	int bw;
	if (voxel == 0) {
		voxel = diag / kAutoVoxelDivisions;
		bw = band_voxels_for(band, voxel);
		for (int guard = 0; guard < 200 && implied_voxels(ext, voxel, bw) > double(max_voxels);
		     guard++) {
			voxel *= 1.25;
			bw = band_voxels_for(band, voxel);
		}
	}
	bw = band_voxels_for(band, voxel);
	double implied = implied_voxels(ext, voxel, bw);
	if (implied > double(max_voxels))
		return drape_error_setf(err, DRAPE_ELIMIT,
					"max_voxels: a field of voxel size %g m and band %d voxels over "
					"this mesh implies %.0f voxels, over the cap max_voxels = %llu",
					voxel, bw, implied, (unsigned long long)max_voxels);

	std::vector<openvdb::Vec3s> points(vertex_count);
	for (uint32_t i = 0; i < vertex_count; i++)
		points[i] = openvdb::Vec3s(vertices[i * 3], vertices[i * 3 + 1], vertices[i * 3 + 2]);
	std::vector<openvdb::Vec3I> tris(triangle_count);
	for (uint32_t t = 0; t < triangle_count; t++)
		tris[t] = openvdb::Vec3I(triangles[t * 3], triangles[t * 3 + 1], triangles[t * 3 + 2]);
	cap_holes(points, tris);
	const std::vector<openvdb::Vec4I> quads;

	vdb_init();
	drape_sdf_info info{};
	/* The exact builder first; OpenVDB's for a mesh it does not take (or
	 * when DRAPE_SDF_BUILDER=openvdb asks for it, to compare the two). */
	openvdb::FloatGrid::Ptr grid;
	std::string why;
	const char *force = std::getenv("DRAPE_SDF_BUILDER");
	if (force != nullptr && std::strcmp(force, "openvdb") == 0)
		why = "DRAPE_SDF_BUILDER=openvdb";
	else
		grid = build_band(points, tris, voxel, bw, info, why);
	if (!grid) {
		info = drape_sdf_info{};
		openvdb::math::Transform::Ptr xform = openvdb::math::Transform::createLinearTransform(voxel);
		const double vdb_start = ms_since(t_start);
		StageClock stage_clock(t_start);
		grid = openvdb::tools::meshToSignedDistanceField<openvdb::FloatGrid>(
			stage_clock, *xform, points, tris, quads, float(bw), std::numeric_limits<float>::max());
		stage_clock.stages(info, vdb_start);
		std::snprintf(info.builder, sizeof info.builder, "openvdb: %s", why.c_str());
	}
	if (!grid || grid->activeVoxelCount() == 0)
		return drape_error_setf(err, DRAPE_ESDF,
					"triangles: the mesh gave an empty field (voxel size %g m)", voxel);

	drape_sdf *sdf = new drape_sdf;
	sdf->refs.store(1, std::memory_order_relaxed);
	sdf->grid = grid;
	info.voxel_size = float(voxel);
	info.band = float(bw * voxel);
	info.voxels = grid->activeVoxelCount();
	openvdb::CoordBBox box = grid->evalActiveVoxelBoundingBox();
	for (int k = 0; k < 3; k++) {
		info.bbox_min[k] = float(box.min()[k] * voxel);
		info.bbox_max[k] = float(box.max()[k] * voxel);
	}
	info.bytes = grid->memUsage();
	info.threads = uint32_t(tbb::this_task_arena::max_concurrency());
	info.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
								  t_start)
				.count();
	sdf->info = info;
	*out = sdf;
	return DRAPE_OK;
}

} // namespace

extern "C" drape_err drape_sdf_build(const float *vertices, uint32_t vertex_count,
				     const uint32_t *triangles, uint32_t triangle_count,
				     float voxel_size, float band, uint64_t max_voxels, drape_sdf **out,
				     drape_error *err)
{
	if (out == nullptr)
		return drape_error_setf(err, DRAPE_EINVAL, "out: NULL");
	try {
		return build(vertices, vertex_count, triangles, triangle_count, voxel_size, band,
			     max_voxels, out, err);
	} catch (const std::bad_alloc &) {
		return drape_error_setf(err, DRAPE_ENOMEM, "sdf: out of memory building the field");
	} catch (const std::exception &e) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB: %s", e.what());
	} catch (...) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB threw an unknown exception");
	}
}

extern "C" void drape_sdf_retain(drape_sdf *sdf)
{
	if (sdf != nullptr)
		sdf->refs.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void drape_sdf_release(drape_sdf *sdf)
{
	/* The acquire-release pair makes every use by other holders happen
	 * before the delete by the last one. */
	if (sdf != nullptr && sdf->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
		delete sdf;
}

extern "C" void drape_sdf_get_info(const drape_sdf *sdf, drape_sdf_info *info)
{
	*info = sdf->info;
}

extern "C" void drape_sdf_sample(const drape_sdf *sdf, const float *points, uint32_t n, float *dist,
				 float *grad)
{
	/* Nothing below allocates or throws: ConstAccessor construction and
	 * getValue only read the tree. */
	using Leaf = openvdb::FloatTree::LeafNodeType;
	openvdb::FloatGrid::ConstAccessor acc = sdf->grid->getConstAccessor();
	const float inv = 1.0f / sdf->info.voxel_size;
	const float band = sdf->info.band;
	/* Values within this of +-band are background: beyond the band. */
	const float edge = band * (1.0f - 1e-5f);
	for (uint32_t i = 0; i < n; i++) {
		float u[3], f[3];
		int c[3];
		bool ok = true;
		for (int k = 0; k < 3; k++) {
			u[k] = points[i * 3 + k] * inv;
			/* Non-finite or absurdly far points would overflow the
			 * integer coordinates; they are free space. */
			if (!(std::fabs(u[k]) < 1e9f)) {
				ok = false;
				break;
			}
			float fl = std::floor(u[k]);
			c[k] = int(fl);
			f[k] = u[k] - fl;
		}
		float g[3] = {0, 0, 0};
		float d = band;
		if (ok) {
			float v[2][2][2];
			const openvdb::Coord ijk(c[0], c[1], c[2]);
			const Leaf *leaf = nullptr;
			/* Most stencils lie inside one 8^3 leaf: read its buffer
			 * directly instead of eight tree lookups. Inactive voxels of
			 * a level-set leaf hold +-background, as the tree would give. */
			if ((c[0] & 7) != 7 && (c[1] & 7) != 7 && (c[2] & 7) != 7)
				leaf = acc.probeConstLeaf(ijk);
			if (leaf != nullptr) {
				const float *buf = leaf->buffer().data() + Leaf::coordToOffset(ijk);
				for (int a = 0; a < 2; a++)
					for (int b = 0; b < 2; b++)
						for (int e = 0; e < 2; e++)
							v[a][b][e] = buf[(a << 6) + (b << 3) + e];
			} else {
				for (int a = 0; a < 2; a++)
					for (int b = 0; b < 2; b++)
						for (int e = 0; e < 2; e++)
							v[a][b][e] = acc.getValue(
								openvdb::Coord(c[0] + a, c[1] + b, c[2] + e));
			}
			/* Trilinear value and its exact partial derivatives. */
			float x00 = v[0][0][0] + (v[1][0][0] - v[0][0][0]) * f[0];
			float x01 = v[0][0][1] + (v[1][0][1] - v[0][0][1]) * f[0];
			float x10 = v[0][1][0] + (v[1][1][0] - v[0][1][0]) * f[0];
			float x11 = v[0][1][1] + (v[1][1][1] - v[0][1][1]) * f[0];
			float y0 = x00 + (x10 - x00) * f[1];
			float y1 = x01 + (x11 - x01) * f[1];
			d = y0 + (y1 - y0) * f[2];
			if (d >= edge) {
				d = band;
			} else {
				float dx00 = v[1][0][0] - v[0][0][0], dx01 = v[1][0][1] - v[0][0][1];
				float dx10 = v[1][1][0] - v[0][1][0], dx11 = v[1][1][1] - v[0][1][1];
				float dxy0 = dx00 + (dx10 - dx00) * f[1];
				float dxy1 = dx01 + (dx11 - dx01) * f[1];
				g[0] = (dxy0 + (dxy1 - dxy0) * f[2]) * inv;
				g[1] = ((x10 - x00) + ((x11 - x01) - (x10 - x00)) * f[2]) * inv;
				g[2] = (y1 - y0) * inv;
			}
		}
		dist[i] = d;
		if (grad != nullptr) {
			grad[i * 3] = g[0];
			grad[i * 3 + 1] = g[1];
			grad[i * 3 + 2] = g[2];
		}
	}
}

/*
 * Serialised fields. The header is written field by field (no struct
 * padding): magic "DRAPESDF", u32 version, f32 voxel_size, f32 band, u64
 * voxels, f32 bbox_min[3], f32 bbox_max[3], f64 build_ms, u64 payload bytes,
 * u64 FNV-1a of the payload; then the payload, one FloatGrid in OpenVDB's
 * stream format. The checksum catches a truncated or damaged file before
 * OpenVDB parses it; the grid is then checked against the header.
 */
namespace {

constexpr char kSdfMagic[8] = {'D', 'R', 'A', 'P', 'E', 'S', 'D', 'F'};
/* Version 2: fields of the exact builder (sdfband.c), whose values differ
 * from OpenVDB's; a cached version-1 file is rebuilt, not reused. */
constexpr uint32_t kSdfVersion = 2;
constexpr size_t kSdfHeader = 8 + 4 + 4 + 4 + 8 + 12 + 12 + 8 + 8 + 8;

uint64_t fnv1a64(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

template <typename T> void put(std::string &s, const T &v)
{
	s.append(reinterpret_cast<const char *>(&v), sizeof v);
}

template <typename T> T get(const unsigned char *&p)
{
	T v;
	std::memcpy(&v, p, sizeof v);
	p += sizeof v;
	return v;
}

drape_err serialize(const drape_sdf *sdf, void **data, size_t *size, drape_error *err)
{
	vdb_init();
	/* A shallow copy (the tree is shared, read only) whose metadata the
	 * writer may touch without racing the threads sampling the field. */
	openvdb::GridBase::Ptr copy = sdf->grid->copyGrid();
	openvdb::GridCPtrVec grids;
	grids.push_back(copy);
	std::ostringstream os(std::ios_base::out | std::ios_base::binary);
	openvdb::io::Stream stream(os);
	stream.setGridStatsMetadataEnabled(false);
	stream.write(grids);
	if (!os)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: writing the grid to memory failed");
	const std::string payload = os.str();
	const drape_sdf_info &in = sdf->info;
	std::string h;
	h.append(kSdfMagic, sizeof kSdfMagic);
	put(h, kSdfVersion);
	put(h, in.voxel_size);
	put(h, in.band);
	put(h, in.voxels);
	for (int k = 0; k < 3; k++)
		put(h, in.bbox_min[k]);
	for (int k = 0; k < 3; k++)
		put(h, in.bbox_max[k]);
	put(h, in.build_ms);
	put(h, uint64_t(payload.size()));
	put(h, fnv1a64(reinterpret_cast<const unsigned char *>(payload.data()), payload.size()));
	if (h.size() != kSdfHeader)
		return drape_error_setf(err, DRAPE_EINTERNAL, "sdf: header of %zu bytes, expected %zu",
					h.size(), kSdfHeader);
	const size_t n = h.size() + payload.size();
	unsigned char *buf = static_cast<unsigned char *>(std::malloc(n));
	if (buf == nullptr)
		return drape_error_setf(err, DRAPE_ENOMEM, "sdf: out of memory serialising the field");
	std::memcpy(buf, h.data(), h.size());
	std::memcpy(buf + h.size(), payload.data(), payload.size());
	*data = buf;
	*size = n;
	return DRAPE_OK;
}

drape_err deserialize(const void *data, size_t size, drape_sdf **out, drape_error *err)
{
	const unsigned char *p = static_cast<const unsigned char *>(data);
	if (size < kSdfHeader)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: %zu bytes, shorter than the %zu-byte header",
					size, kSdfHeader);
	if (std::memcmp(p, kSdfMagic, sizeof kSdfMagic) != 0)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: not a drape field (magic)");
	p += sizeof kSdfMagic;
	const uint32_t version = get<uint32_t>(p);
	if (version != kSdfVersion)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: version %u, this build reads %u",
					(unsigned)version, (unsigned)kSdfVersion);
	drape_sdf_info info{};
	info.voxel_size = get<float>(p);
	info.band = get<float>(p);
	info.voxels = get<uint64_t>(p);
	for (int k = 0; k < 3; k++)
		info.bbox_min[k] = get<float>(p);
	for (int k = 0; k < 3; k++)
		info.bbox_max[k] = get<float>(p);
	info.build_ms = get<double>(p);
	std::snprintf(info.builder, sizeof info.builder, "read back from bytes");
	const uint64_t len = get<uint64_t>(p);
	const uint64_t sum = get<uint64_t>(p);
	if (len != size - kSdfHeader)
		return drape_error_setf(err, DRAPE_ESDF,
					"sdf: payload of %zu bytes, the header says %llu (truncated or padded)",
					size - kSdfHeader, (unsigned long long)len);
	if (fnv1a64(p, size_t(len)) != sum)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: payload checksum mismatch (corrupt)");
	if (!(info.voxel_size > 0) || !std::isfinite(info.voxel_size) || !(info.band > 0) ||
	    !std::isfinite(info.band))
		return drape_error_setf(err, DRAPE_ESDF, "sdf: voxel_size %g or band %g is not positive",
					double(info.voxel_size), double(info.band));
	vdb_init();
	std::istringstream is(std::string(reinterpret_cast<const char *>(p), size_t(len)),
			      std::ios_base::in | std::ios_base::binary);
	openvdb::io::Stream stream(is);
	openvdb::GridPtrVecPtr grids = stream.getGrids();
	if (!grids || grids->size() != 1)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: the payload holds %zu grids, expected 1",
					grids ? grids->size() : size_t(0));
	openvdb::FloatGrid::Ptr grid = openvdb::gridPtrCast<openvdb::FloatGrid>((*grids)[0]);
	if (!grid)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: the payload's grid is not a float grid");
	const openvdb::Vec3d vs = grid->voxelSize();
	if (float(vs[0]) != info.voxel_size || vs[0] != vs[1] || vs[0] != vs[2])
		return drape_error_setf(err, DRAPE_ESDF, "sdf: the grid's voxel size %g is not the header's %g",
					vs[0], double(info.voxel_size));
	if (grid->activeVoxelCount() != info.voxels)
		return drape_error_setf(err, DRAPE_ESDF, "sdf: the grid has %llu active voxels, the header %llu",
					(unsigned long long)grid->activeVoxelCount(),
					(unsigned long long)info.voxels);
	info.bytes = grid->memUsage();
	drape_sdf *sdf = new drape_sdf;
	sdf->refs.store(1, std::memory_order_relaxed);
	sdf->grid = grid;
	sdf->info = info;
	*out = sdf;
	return DRAPE_OK;
}

} // namespace

/* A hash of the field's voxels for the tests: every leaf's origin, its 512
 * values and its active mask, FNV-1a each, summed so that the leaves'
 * order does not matter. Two fields hash alike when their trees hold the
 * same leaves with the same bits. */
extern "C" uint64_t sim_sdf_voxel_hash(const drape_sdf *sdf, uint64_t *leaf_count)
{
	using Leaf = openvdb::FloatTree::LeafNodeType;
	uint64_t sum = 0, n = 0;
	for (auto it = sdf->grid->tree().cbeginLeaf(); it; ++it) {
		const Leaf &leaf = *it;
		uint64_t h = 0xcbf29ce484222325ull;
		auto mix = [&h](const void *p, size_t size) {
			const unsigned char *c = static_cast<const unsigned char *>(p);
			for (size_t i = 0; i < size; i++)
				h = (h ^ c[i]) * 0x100000001b3ull;
		};
		const openvdb::Coord o = leaf.origin();
		const int32_t org[3] = {o[0], o[1], o[2]};
		mix(org, sizeof org);
		for (openvdb::Index i = 0; i < Leaf::SIZE; i++) {
			const float v = leaf.getValue(i);
			mix(&v, sizeof v);
		}
		for (openvdb::Index w = 0; w < Leaf::NodeMaskType::WORD_COUNT; w++) {
			const uint64_t m = leaf.getValueMask().getWord<uint64_t>(w);
			mix(&m, sizeof m);
		}
		sum += h;
		n++;
	}
	if (leaf_count != nullptr)
		*leaf_count = n;
	return sum;
}

extern "C" drape_err drape_sdf_serialize(const drape_sdf *sdf, void **data, size_t *size, drape_error *err)
{
	if (sdf == nullptr || data == nullptr || size == nullptr)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: NULL",
					sdf == nullptr ? "sdf" : data == nullptr ? "data" : "size");
	try {
		return serialize(sdf, data, size, err);
	} catch (const std::bad_alloc &) {
		return drape_error_setf(err, DRAPE_ENOMEM, "sdf: out of memory serialising the field");
	} catch (const std::exception &e) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB: %s", e.what());
	} catch (...) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB threw an unknown exception");
	}
}

extern "C" drape_err drape_sdf_deserialize(const void *data, size_t size, drape_sdf **out, drape_error *err)
{
	if (data == nullptr || out == nullptr)
		return drape_error_setf(err, DRAPE_EINVAL, "%s: NULL", data == nullptr ? "data" : "out");
	try {
		return deserialize(data, size, out, err);
	} catch (const std::bad_alloc &) {
		return drape_error_setf(err, DRAPE_ENOMEM, "sdf: out of memory reading the field");
	} catch (const std::exception &e) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB: %s", e.what());
	} catch (...) {
		return drape_error_setf(err, DRAPE_ESDF, "sdf: OpenVDB threw an unknown exception");
	}
}
