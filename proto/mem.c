/*
 * The arena behind every decoded message: each allocation is one malloc
 * chained to the arena, so freeing a decoded message is one walk and no
 * decoded pointer can outlive or escape its owner by accident.
 */
#include "proto/wire.h"

#include <stddef.h>
#include <stdlib.h>

/* The header in front of each allocation. The union with max_align_t keeps
 * the user part aligned for any type (floats, uint64, structs). */
typedef union mem_block {
	union mem_block *next;
	max_align_t align_;
} mem_block;

struct proto_mem {
	mem_block *head;
};

proto_mem *proto_mem_new(void)
{
	return calloc(1, sizeof(proto_mem));
}

void *proto_mem_alloc(proto_mem *mem, size_t size)
{
	if (size > SIZE_MAX - sizeof(mem_block))
		return NULL;
	mem_block *b = calloc(1, sizeof(mem_block) + (size ? size : 1));
	if (b == NULL)
		return NULL;
	b->next = mem->head;
	mem->head = b;
	return b + 1;
}

void proto_mem_free(proto_mem *mem)
{
	if (mem == NULL)
		return;
	mem_block *b = mem->head;
	while (b != NULL) {
		mem_block *next = b->next;
		free(b);
		b = next;
	}
	free(mem);
}

void proto_buf_free(proto_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
}
