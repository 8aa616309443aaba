/* The core's vset_error upcall takes a va_list, which stable Rust cannot
 * build. This wrapper builds one around a single "%s" argument, so messages
 * reach OpenSSL's error queue verbatim (no format-string interpretation). */
#include <stdarg.h>
#include <stdint.h>
#include <openssl/core.h>

typedef void (*rustica_vset_error_fn)(const OSSL_CORE_HANDLE *, uint32_t,
                                      const char *, va_list);

static void rustica_call_vset(rustica_vset_error_fn fn,
                              const OSSL_CORE_HANDLE *handle, uint32_t reason,
                              const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fn(handle, reason, fmt, ap);
    va_end(ap);
}

void rustica_raise(rustica_vset_error_fn fn, const OSSL_CORE_HANDLE *handle,
                   uint32_t reason, const char *message)
{
    rustica_call_vset(fn, handle, reason, "%s", message);
}

/* The reason alone: a NULL format adds no text, so nothing is formatted. */
void rustica_raise_reason(rustica_vset_error_fn fn,
                          const OSSL_CORE_HANDLE *handle, uint32_t reason)
{
    rustica_call_vset(fn, handle, reason, NULL);
}
