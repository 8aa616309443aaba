/*
 * A provider that registers the RSA names rustica registers and does
 * nothing: the floor for what loading any RSA provider into a process
 * costs. workshop/scripts/bench-load.sh compares rustica against it.
 *
 * Its algorithms carry the property "provider=idle", so nothing selects
 * them unless asked; its implementations have just enough functions for
 * OpenSSL to construct them (a key manager needs `has`, a signature or
 * cipher an init and an operation for one direction), so they sit in the
 * method stores beside the default provider's as rustica's do: key
 * decoding collects the second key manager's names and every fetch of
 * RSA walks over a second implementation. Nothing calls them; every
 * function declines.
 *
 * Built with -DIDLE_DECODERS it offers nothing but the six DER decoders a
 * provider would need to decode RSA and RSA-PSS keys into its own key
 * manager (the structures the default provider decodes RSA from), each of
 * which declines every input: loaded beside rustica, it measures what
 * such decoders cost OpenSSL's decoder set-up and decoding
 * (docs/performance.md, "Instructions per process").
 */
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <stddef.h>

static void *idle_new(void *provctx) { (void)provctx; return NULL; }
static void idle_free(void *obj) { (void)obj; }
static int idle_has(const void *keydata, int selection) { (void)keydata; (void)selection; return 0; }
static int idle_init(void *ctx, void *key, const OSSL_PARAM params[])
{
    (void)ctx; (void)key; (void)params;
    return 0;
}
static int idle_op(void *ctx, unsigned char *out, size_t *outlen, size_t outsize,
                   const unsigned char *in, size_t inlen)
{
    (void)ctx; (void)out; (void)outlen; (void)outsize; (void)in; (void)inlen;
    return 0;
}

static const OSSL_DISPATCH idle_keymgmt[] = {
    { OSSL_FUNC_KEYMGMT_NEW, (void (*)(void))idle_new },
    { OSSL_FUNC_KEYMGMT_FREE, (void (*)(void))idle_free },
    { OSSL_FUNC_KEYMGMT_HAS, (void (*)(void))idle_has },
    { 0, NULL }
};
static const OSSL_DISPATCH idle_signature[] = {
    { OSSL_FUNC_SIGNATURE_NEWCTX, (void (*)(void))idle_new },
    { OSSL_FUNC_SIGNATURE_FREECTX, (void (*)(void))idle_free },
    { OSSL_FUNC_SIGNATURE_SIGN_INIT, (void (*)(void))idle_init },
    { OSSL_FUNC_SIGNATURE_SIGN, (void (*)(void))idle_op },
    { 0, NULL }
};
static const OSSL_DISPATCH idle_cipher[] = {
    { OSSL_FUNC_ASYM_CIPHER_NEWCTX, (void (*)(void))idle_new },
    { OSSL_FUNC_ASYM_CIPHER_FREECTX, (void (*)(void))idle_free },
    { OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, (void (*)(void))idle_init },
    { OSSL_FUNC_ASYM_CIPHER_DECRYPT, (void (*)(void))idle_op },
    { 0, NULL }
};

static const OSSL_ALGORITHM keymgmt_algs[] = {
    { "RSA:rsaEncryption:1.2.840.113549.1.1.1", "provider=idle", idle_keymgmt, NULL },
    { "RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10", "provider=idle", idle_keymgmt, NULL },
    { NULL, NULL, NULL, NULL }
};
static const OSSL_ALGORITHM signature_algs[] = {
    { "RSA:rsaEncryption:1.2.840.113549.1.1.1", "provider=idle", idle_signature, NULL },
    { NULL, NULL, NULL, NULL }
};
static const OSSL_ALGORITHM cipher_algs[] = {
    { "RSA:rsaEncryption:1.2.840.113549.1.1.1", "provider=idle", idle_cipher, NULL },
    { NULL, NULL, NULL, NULL }
};

#ifdef IDLE_DECODERS
static void *decoder_newctx(void *provctx) { return provctx; }
static void decoder_freectx(void *ctx) { (void)ctx; }
/* Declines: no object, no error, so the decoding goes on to others. */
static int decoder_decode(void *ctx, OSSL_CORE_BIO *in, int selection, OSSL_CALLBACK *data_cb,
                          void *data_cbarg, OSSL_PASSPHRASE_CALLBACK *pw_cb, void *pw_cbarg)
{
    (void)ctx; (void)in; (void)selection; (void)data_cb; (void)data_cbarg;
    (void)pw_cb; (void)pw_cbarg;
    return 1;
}
static const OSSL_DISPATCH idle_decoder[] = {
    { OSSL_FUNC_DECODER_NEWCTX, (void (*)(void))decoder_newctx },
    { OSSL_FUNC_DECODER_FREECTX, (void (*)(void))decoder_freectx },
    { OSSL_FUNC_DECODER_DECODE, (void (*)(void))decoder_decode },
    { 0, NULL }
};
#define RSA_NAMES "RSA:rsaEncryption:1.2.840.113549.1.1.1"
#define PSS_NAMES "RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10"
static const OSSL_ALGORITHM decoder_algs[] = {
    { RSA_NAMES, "provider=idle,input=der,structure=PrivateKeyInfo", idle_decoder, NULL },
    { RSA_NAMES, "provider=idle,input=der,structure=SubjectPublicKeyInfo", idle_decoder, NULL },
    { RSA_NAMES, "provider=idle,input=der,structure=type-specific", idle_decoder, NULL },
    { RSA_NAMES, "provider=idle,input=der,structure=rsa", idle_decoder, NULL },
    { PSS_NAMES, "provider=idle,input=der,structure=PrivateKeyInfo", idle_decoder, NULL },
    { PSS_NAMES, "provider=idle,input=der,structure=SubjectPublicKeyInfo", idle_decoder, NULL },
    { NULL, NULL, NULL, NULL }
};
#endif

static const OSSL_ALGORITHM *idle_query(void *provctx, int id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
#ifdef IDLE_DECODERS
    return id == OSSL_OP_DECODER ? decoder_algs : NULL;
#endif
    switch (id) {
    case OSSL_OP_KEYMGMT: return keymgmt_algs;
    case OSSL_OP_SIGNATURE: return signature_algs;
    case OSSL_OP_ASYM_CIPHER: return cipher_algs;
    }
    return NULL;
}

static void idle_teardown(void *provctx) { (void)provctx; }

static const OSSL_DISPATCH idle_provider[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))idle_teardown },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))idle_query },
    { 0, NULL }
};

int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    (void)handle;
    (void)in;
    *out = idle_provider;
    *provctx = (void *)idle_provider;
    return 1;
}
