/*
 * PNG writer of the drape CLI (see png.h).
 */
#include "client/cli/png.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libpng reports errors by longjmp; the message is kept for the caller. */
typedef struct png_ctx {
	char message[160];
} png_ctx;

static void on_png_error(png_structp png, png_const_charp msg)
{
	png_ctx *ctx = png_get_error_ptr(png);
	snprintf(ctx->message, sizeof ctx->message, "%s", msg);
	png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
	(void)png, (void)msg;
}

/* Separate from cli_png_write so that no local it changes after setjmp is
 * read after a longjmp. */
static int write_png(FILE *f, const uint8_t *rgb, uint32_t width, uint32_t height, png_ctx *ctx)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, on_png_error, on_png_warning);
	if (png == NULL) {
		snprintf(ctx->message, sizeof ctx->message, "no memory for libpng");
		return -1;
	}
	png_infop info = png_create_info_struct(png);
	if (info == NULL) {
		png_destroy_write_struct(&png, NULL);
		snprintf(ctx->message, sizeof ctx->message, "no memory for libpng");
		return -1;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return -1;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	/* Level 6 with the sub filter: previews are mostly flat colour, which
	 * compresses well without spending the time of level 9. */
	png_set_compression_level(png, 6);
	png_set_filter(png, 0, PNG_FILTER_SUB);
	png_write_info(png, info);
	for (uint32_t y = 0; y < height; y++)
		png_write_row(png, (png_const_bytep)(rgb + (size_t)y * width * 3));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return 0;
}

drape_err cli_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height, drape_error *err)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	if (tmp == NULL)
		return drape_error_setf(err, DRAPE_ENOMEM, "%s: no memory", path);
	snprintf(tmp, n + 16, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "wb");
	if (f == NULL) {
		drape_err rc = drape_error_setf(err, DRAPE_EIO, "%s: cannot create: %s", path, strerror(errno));
		free(tmp);
		return rc;
	}
	png_ctx ctx = {{0}};
	int rc = write_png(f, rgb, width, height, &ctx);
	if (rc == 0 && fflush(f) != 0) {
		snprintf(ctx.message, sizeof ctx.message, "%s", strerror(errno));
		rc = -1;
	}
	if (fclose(f) != 0 && rc == 0) {
		snprintf(ctx.message, sizeof ctx.message, "%s", strerror(errno));
		rc = -1;
	}
	if (rc == 0 && rename(tmp, path) != 0) {
		snprintf(ctx.message, sizeof ctx.message, "%s", strerror(errno));
		rc = -1;
	}
	if (rc != 0) {
		unlink(tmp);
		free(tmp);
		return drape_error_setf(err, DRAPE_EIO, "%s: cannot write: %s", path, ctx.message);
	}
	free(tmp);
	return DRAPE_OK;
}
