/* The error table behind include/drape/error.h. */
#include "drape/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *drape_strerror(drape_err code)
{
	switch (code) {
#define DRAPE_ERR_TEXT_(name, value, text) \
	case DRAPE_##name:                  \
		return text;
		DRAPE_ERRNO_MAP(DRAPE_ERR_TEXT_)
#undef DRAPE_ERR_TEXT_
	}
	return "unknown error";
}

const char *drape_err_name(drape_err code)
{
	switch (code) {
#define DRAPE_ERR_NAME_(name, value, text) \
	case DRAPE_##name:                  \
		return #name;
		DRAPE_ERRNO_MAP(DRAPE_ERR_NAME_)
#undef DRAPE_ERR_NAME_
	}
	return "EUNKNOWN";
}

drape_err drape_err_from_name(const char *name)
{
	if (name == NULL)
		return DRAPE_EINTERNAL;
#define DRAPE_ERR_PARSE_(n, value, text) \
	if (strcmp(name, #n) == 0)        \
		return DRAPE_##n;
	DRAPE_ERRNO_MAP(DRAPE_ERR_PARSE_)
#undef DRAPE_ERR_PARSE_
	return DRAPE_EINTERNAL;
}

drape_err drape_error_setf(drape_error *err, drape_err code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

void drape_error_clear(drape_error *err)
{
	if (err != NULL) {
		err->code = DRAPE_OK;
		err->message[0] = '\0';
	}
}
