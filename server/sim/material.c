/*
 * Fabric presets: the physical material constants of the XPBD model for
 * named fabrics (drape_material_preset), from published measurements.
 * README.md ("Materials") shows the resulting table with its sources.
 *
 * Every preset is written in the units of its source and converted here,
 * so the numbers below can be checked against the papers line by line:
 *
 *  - Wang, O'Brien, Ramamoorthi, "Data-Driven Elastic Models for Cloth:
 *    Modeling and Measurement", SIGGRAPH 2011: ten fabrics measured, the
 *    data released by the authors (graphics.berkeley.edu/papers
 *    /Wang-DDE-2011-08) and shipped with ARCSim as one JSON file per fabric. Each
 *    file gives the areal density (kg/m^2), membrane coefficients
 *    [c11, c12, c22, c33] of a piecewise-linear orthotropic model (the
 *    first row is the zero-strain one, the one that matters for drape) and
 *    bending stiffness (N*m) at 0, 45 and 90 degrees for curvatures 0, 5,
 *    ... 20 1/m. ARCSim's reference code doubles the membrane entries and
 *    uses them with Green strain E as stress S00 = k0 E00 + k1 E11,
 *    S01 = k3 E01 / 2 (dde.cpp, physics.cpp). At small strain that is:
 *      tensile stiffness along axis 1 = 2 c11 N/m (axis 2: 2 c22), the
 *      Poisson coupling c12 being small against them;
 *      shear: energy k3 E01^2 / 2 with E01 = gamma / 2 for a shear angle
 *      gamma gives k3 / 4 = 2 c33 / 4 = c33 / 2 N/m per radian;
 *      bending: B = the zero-curvature entry, N*m; the API has one B, the
 *      mean of the 0 and 90 degree entries.
 *    Axis 1 is the more extensible direction in every file (for the stretch
 *    denim, whose spandex is in the weft; for the knits, the course
 *    direction), so it is taken as the weft (mesh v) and axis 2 as the warp
 *    (mesh u).
 *  - Kawabata KES-F figures: tensile strain EMT (%) at the standard maximum
 *    load Fm = 500 gf/cm for wovens, bending rigidity B (gf*cm^2/cm),
 *    shear rigidity G (gf/cm/degree), weight W (mg/cm^2). Conversions:
 *      1 gf = 9.80665e-3 N, 1 cm = 1e-2 m;
 *      tensile (secant) stiffness = Fm / (EMT / 100):
 *        500 gf/cm = 500 * 9.80665e-3 N / 1e-2 m = 490.33 N/m;
 *      B: gf*cm^2/cm = gf*cm = 9.80665e-3 N * 1e-2 m = 9.80665e-5 N*m;
 *      G: gf/cm/degree = 9.80665e-3 N / 1e-2 m per (pi/180) rad
 *         = 0.980665 * 57.29578 = 56.188 N/m per radian;
 *      W: mg/cm^2 = 1e-6 kg / 1e-4 m^2 = 1e-2 kg/m^2.
 *  - Where no measurement was found for a fabric, the value is derived and
 *    the derivation is written next to it.
 *
 * Damping is not in any of these sources: every preset gets 0.24 1/s, the
 * rate of the PBD model's default (velocity * 0.99 per frame at 24 fps:
 * -ln(0.99) * 24 = 0.241 1/s), so switching a scene to a preset does not
 * change how quickly its motion dies out. Compression is 0 (= stretch).
 */
#include "drape/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* KES-F conversion factors (see above). */
#define MAT_GF_N 9.80665e-3                        /* N per gram-force */
#define MAT_KES_FM_N_PER_M (500.0 * MAT_GF_N / 1e-2) /* 490.33 N/m */
#define MAT_KES_B_NM (MAT_GF_N * 1e-2)             /* gf*cm -> N*m */
#define MAT_KES_G_N_PER_M (MAT_GF_N / 1e-2 * 180.0 / 3.14159265358979323846)
#define MAT_KES_W_KG_M2 1e-2                       /* mg/cm^2 -> kg/m^2 */
#define MAT_DAMPING_RATE 0.24f                     /* 1/s, see above */

typedef struct mat_fabric {
	const char *name;
	double density;      /* kg/m^2 */
	double stretch_warp; /* N/m, mesh u */
	double stretch_weft; /* N/m, mesh v */
	double shear;        /* N/m per radian */
	double bend;         /* N*m */
} mat_fabric;

/* A fabric of Wang et al. 2011 from its zero-strain membrane row and
 * zero-curvature bending entries, converted as explained above. */
static mat_fabric mat_wang(const char *name, double density, double c11, double c22, double c33,
			   double bend0, double bend90)
{
	mat_fabric f = {name, density, 2.0 * c22, 2.0 * c11, 0.5 * c33, 0.5 * (bend0 + bend90)};
	return f;
}

/* A woven fabric from KES-F figures (EMT %, B, G, W in the KES units). */
static mat_fabric mat_kes(const char *name, double emt_percent, double b, double g, double w)
{
	double k = MAT_KES_FM_N_PER_M / (emt_percent / 100.0);
	mat_fabric f = {name, w * MAT_KES_W_KG_M2, k, k, g * MAT_KES_G_N_PER_M, b * MAT_KES_B_NM};
	return f;
}

/* Scales a measured fabric to another areal density of the same fibre and
 * weave: thickness grows with mass per area, so membrane and shear
 * stiffness (modulus * thickness) scale with the mass ratio r and bending
 * (modulus * thickness^3) with r^3. */
static mat_fabric mat_scaled(const char *name, mat_fabric base, double density)
{
	double r = density / base.density;
	mat_fabric f = {name,
			density,
			base.stretch_warp * r,
			base.stretch_weft * r,
			base.shear * r,
			base.bend * r * r * r};
	return f;
}

/* An isotropic sheet of thickness t (m) whose bending rigidity B (N*m)
 * was measured: thin-plate theory, B = E t^3 / (12 (1 - nu^2)), gives the
 * modulus E and so the membrane stiffness E t and shear E t / (2 (1 + nu)). */
static mat_fabric mat_plate(const char *name, double density, double bend, double t, double nu)
{
	double e = 12.0 * bend * (1.0 - nu * nu) / (t * t * t);
	mat_fabric f = {name, density, e * t, e * t, e * t / (2.0 * (1.0 + nu)), bend};
	return f;
}

static const char *const mat_names[] = {"cotton", "denim", "jersey", "polyester",
					"silk",   "wool",  "leather", NULL};

/* The fabric called `name`; 0 if there is none. Built on each call (a few
 * multiplications) so the table stays in the units of its sources. */
static int mat_lookup(const char *name, mat_fabric *out)
{
	/* Wang et al. 2011, "royal target": 65 % cotton 35 % polyester twill
	 * (trousers); density 0.220, zero-strain row [2016.55456, 9.170511,
	 * 2034.97644, 104.759674], bending 125.409805e-6 (0 deg) and
	 * 125.409805e-6 (90 deg). The woven fabrics' membrane entries sit at
	 * about 2,000 N/m at every angle and strain in the released data,
	 * which looks like a bound of the fit rather than a measurement:
	 * read them as "at least" (woven cloth barely stretches under its
	 * own weight either way). */
	if (strcmp(name, "cotton") == 0) {
		*out = mat_wang(name, 0.220, 2016.55456, 2034.97644, 104.759674, 125.409805e-6,
				125.409805e-6);
		return 1;
	}
	/* Wang et al. 2011, "11oz black denim": 99 % cotton 1 % spandex
	 * (jeans); density 0.324, [205.352005, 10.234077, 1013.88629,
	 * 53.387184], bending 64.196457e-6 and 96.951576e-6. */
	if (strcmp(name, "denim") == 0) {
		*out = mat_wang(name, 0.324, 205.352005, 1013.88629, 53.387184, 64.196457e-6,
				96.951576e-6);
		return 1;
	}
	/* Wang et al. 2011, "gray interlock": 60 % cotton 40 % polyester
	 * interlock knit (T-shirt); density 0.187, [16.593832, -14.695990,
	 * 34.477123, 36.860302], bending 23.191698e-6 and 14.267624e-6. */
	if (strcmp(name, "jersey") == 0) {
		*out = mat_wang(name, 0.187, 16.593832, 34.477123, 36.860302, 23.191698e-6,
				14.267624e-6);
		return 1;
	}
	/* Wang et al. 2011, "white dots on black": 100 % polyester woven
	 * (tablecloth); density 0.128, [2002.08618, 0.345588, 2027.48559,
	 * 19.189022], bending 51.713814e-6 and 31.282822e-6. */
	if (strcmp(name, "polyester") == 0) {
		*out = mat_wang(name, 0.128, 2002.08618, 2027.48559, 19.189022, 51.713814e-6,
				31.282822e-6);
		return 1;
	}
	/* Silk crepe de chine, 14 momme: 14 * 4.340 g/m^2 (1 momme = 1 lb
	 * per 45 in x 100 yd = 453.59 g / 104.52 m^2) = 60.8 g/m^2. No
	 * stiffness measurement was found, so the stiffness is derived: the
	 * polyester plain weave above (a fine continuous-filament weave like
	 * silk's) scaled to silk's areal density (membrane * r, bending *
	 * r^3, r = 0.0608 / 0.128). Its bending length (B / (rho g))^(1/3)
	 * comes out at 1.9 cm, in the range of light dress fabrics. */
	if (strcmp(name, "silk") == 0) {
		mat_fabric base;
		mat_lookup("polyester", &base);
		*out = mat_scaled(name, base, 14.0 * 4.340e-3);
		return 1;
	}
	/* Men's worsted suiting, KES-F: the middle of the usual ranges for
	 * winter suiting in Kawabata's hand-evaluation work (EMT 4-8 %,
	 * B 0.08-0.12 gf*cm^2/cm, G 0.5-0.8 gf/cm/deg, W 20-28 mg/cm^2);
	 * representative figures, not one measured sample. */
	if (strcmp(name, "wool") == 0) {
		*out = mat_kes(name, 6.0, 0.10, 0.65, 24.0);
		return 1;
	}
	/* Sheep garment leather: Memon, Chaklie, Yesuf, Zhu, "Study on
	 * Effect of Leather Rigidity and Thickness on Drapability of Sheep
	 * Garment Leather", Materials 14 (2021) 4553: flexural rigidity
	 * 9.2-22 and thickness 0.64-0.96 mm over four samples. Taken: the
	 * middles, B = 15.6 uN*m (the unit FAST and ASTM D1388 results are
	 * usually given in; an assumption, the abstract gives none) and
	 * t = 0.8 mm. Areal density: t times an apparent density of
	 * 0.8 g/cm^3 (assumed, typical of chrome-tanned skins) = 0.64 kg/m^2.
	 * Membrane and shear stiffness derived from B and t by thin-plate
	 * theory with nu = 0.3 (mat_plate). */
	if (strcmp(name, "leather") == 0) {
		*out = mat_plate(name, 0.8e-3 * 800.0, 15.6e-6, 0.8e-3, 0.3);
		return 1;
	}
	return 0;
}

const char *const *drape_material_preset_names(void)
{
	return mat_names;
}

drape_err drape_material_preset(const char *name, drape_sim_params *p, drape_error *err)
{
	if (p == NULL)
		return drape_error_setf(err, DRAPE_EINVAL, "material: no params given");
	mat_fabric f;
	if (name == NULL || !mat_lookup(name, &f)) {
		char list[160];
		size_t n = 0;
		list[0] = '\0';
		for (int i = 0; mat_names[i] != NULL && n + 1 < sizeof list; i++) {
			int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", mat_names[i]);
			if (w < 0)
				break;
			n += (size_t)w;
		}
		return drape_error_setf(err, DRAPE_EINVAL, "material: unknown preset \"%.64s\" (known: %s)",
					name ? name : "(null)", list);
	}
	p->model = DRAPE_MODEL_XPBD;
	p->density = (float)f.density;
	p->stretch_k = (float)f.stretch_warp;
	p->stretch_k_weft = (float)f.stretch_weft;
	p->shear_k = (float)f.shear;
	p->bend_k = (float)f.bend;
	p->compress_k = 0.0f;
	p->damping_rate = MAT_DAMPING_RATE;
	return DRAPE_OK;
}
