// An LD_PRELOAD library that counts heap allocations (malloc, calloc, realloc, posix_memalign)
// made by a process and prints "mallocs: N" on standard error when it exits. The tests run
// pipebench under it for two session lengths: the difference is the steady state's allocations.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
static atomic_long count;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
// calloc is needed by dlsym itself before the real calloc is known: serve it from a static block.
static char boot[4096]; static size_t boot_used;
void *malloc(size_t n) { if (!real_malloc) real_malloc = dlsym(RTLD_NEXT, "malloc"); atomic_fetch_add(&count, 1); return real_malloc(n); }
void *calloc(size_t a, size_t b) { if (!real_calloc) { void *p = boot + boot_used; boot_used += (a*b + 15) & ~15; return p; } atomic_fetch_add(&count, 1); return real_calloc(a, b); }
void *realloc(void *p, size_t n) { if (!real_realloc) real_realloc = dlsym(RTLD_NEXT, "realloc"); atomic_fetch_add(&count, 1); return real_realloc(p, n); }
int posix_memalign(void **p, size_t a, size_t n) { if (!real_posix_memalign) real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign"); atomic_fetch_add(&count, 1); return real_posix_memalign(p, a, n); }
void free(void *p) { static void (*real_free)(void *); if ((char*)p >= boot && (char*)p < boot + sizeof boot) return; if (!real_free) real_free = dlsym(RTLD_NEXT, "free"); real_free(p); }
__attribute__((constructor)) static void init(void) { real_calloc = dlsym(RTLD_NEXT, "calloc"); }
__attribute__((destructor)) static void report(void) { fprintf(stderr, "mallocs: %ld\n", (long)count); }
