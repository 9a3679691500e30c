/*
 * drape_version and drape_abi_struct_size: what a binding that loads
 * libdrape at run time checks before its first call (include/drape/drape.h).
 */
#include "drape/drape.h"
#include "drape/scene.h"

#include <string.h>

const char *drape_version(void)
{
	return DRAPE_VERSION_STRING;
}

/* Every struct with a body in the public headers, by its C name. A struct
 * added to a public header is added here too; tests/unit/test_client_abi.c
 * reads the headers and fails on one that is missing. */
#define DRAPE_ABI_STRUCTS(X)                                                                 \
	X(drape_error)                                                                       \
	X(drape_sim_params)                                                                  \
	X(drape_sim_desc)                                                                    \
	X(drape_stitch)                                                                      \
	X(drape_sim_object)                                                                  \
	X(drape_object_desc)                                                                 \
	X(drape_sim_topology)                                                                \
	X(drape_sim_stats)                                                                   \
	X(drape_keyframe)                                                                    \
	X(drape_collider_desc)                                                               \
	X(drape_sdf_info)                                                                    \
	X(drape_tri_pair)                                                                    \
	X(drape_client_opts)                                                                 \
	X(drape_server_limits)                                                               \
	X(drape_server_info)                                                                 \
	X(drape_session)                                                                     \
	X(drape_session_desc)                                                                \
	X(drape_create_info)                                                                 \
	X(drape_run_info)                                                                    \
	X(drape_status)                                                                      \
	X(drape_session_entry)                                                               \
	X(drape_server_stats)                                                                \
	X(drape_frame)                                                                       \
	X(drape_scene_info)

size_t drape_abi_struct_size(const char *name)
{
	if (name == NULL)
		return 0;
#define DRAPE_ABI_SIZE_(type)               \
	if (strcmp(name, #type) == 0)       \
		return sizeof(type);
	DRAPE_ABI_STRUCTS(DRAPE_ABI_SIZE_)
#undef DRAPE_ABI_SIZE_
	return 0;
}
