/*
 * PNG output of the drape CLI (preview images), through libpng. Kept out of
 * libdrape so the client library links nothing beyond nng, msgpack and cJSON.
 */
#ifndef DRAPE_CLI_PNG_H
#define DRAPE_CLI_PNG_H

#include <stdint.h>

#include "drape/error.h"

/* Writes an 8-bit RGB image (width * height * 3 bytes, rows from the top)
 * to `path` as PNG, through a temporary file renamed into place, so a
 * failed write leaves no partial image. DRAPE_EIO names the path and why. */
drape_err cli_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height, drape_error *err);

#endif
