/* sizes: how much a message from the worker holds, for the output caps
 * (limits.c). Sizes are those of the JSON text the message becomes, without
 * making it; an image is a MIME value whose bytes are one (a PNG's signature, an
 * SVG's root element), whatever its key says. Everything here is a pure
 * function of borrowed JSON. */
#ifndef SANDPIT_SIZES_H
#define SANDPIT_SIZES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The length of v as compact JSON text, strings counted by their bytes (not by
 * how JSON escapes them); 0 for NULL. */
size_t sizes_json(const json_t *v);

/* Whether the MIME value v under key mime holds an image of that type: base64
 * text whose first bytes are a PNG's, JPEG's, GIF's, WebP's or BMP's signature,
 * or for image/svg+xml, text whose root element is <svg>. Any other value,
 * under an image/ key or not, is text. */
bool sizes_is_image(const char *mime, const json_t *v);

/* The bytes of the images in a display's content (its "data" values that hold
 * one), or 0. */
size_t sizes_images(const json_t *content);

#endif
