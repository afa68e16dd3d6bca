#include "allocation_counter.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

// Under a sanitizer the runtime owns malloc and free (ThreadSanitizer intercepts them and
// tracks every block): an interposer here would bypass it, and the dynamic loader calls malloc
// before the runtime is initialised, so the instrumented interposer crashed the process at
// start (`pipebench --help` exited with signal 11 under ThreadSanitizer). Sanitized builds
// have no counter: mp_allocation_counter_active() says so and `pipebench bench` refuses to
// report allocations.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define MP_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MP_SANITIZED 1
#endif

#ifdef MP_SANITIZED

long mp_allocation_count(void) { return 0; }

int mp_allocation_counter_active(void) { return 0; }

#else

// glibc's allocator under its internal names (exported by libc.so.6).
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_long allocations;

long mp_allocation_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

int mp_allocation_counter_active(void) {
    long before = mp_allocation_count();
    void *(*volatile allocate)(size_t) = malloc;
    void *pointer = allocate(16);
    free(pointer);
    return mp_allocation_count() > before;
}

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) {
    count();
    return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
    count();
    return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
    count();
    return __libc_realloc(pointer, size);
}

void free(void *pointer) { __libc_free(pointer); }

void *memalign(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *result = pointer;
    return 0;
}

#endif
