/*
 * z90crypt-card's exchange with the card (z90crypt-card.c has the
 * overview): one connection per request, the card's uid checked
 * (SO_PEERCRED) before any operand is sent, the frames of
 * testbed/card/src/wire.rs (little-endian), and the kernel's request timeout.
 */
#include "z90crypt-card.h"

/* ---- the exchange with the card ---- */

const char *card_socket(void)
{
    const char *path = getenv("Z90CRYPT_CARD_SOCKET");
    if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return NULL;
    return path;
}

static void put_le32(unsigned char *b, uint32_t v)
{
    b[0] = v & 0xff;
    b[1] = (v >> 8) & 0xff;
    b[2] = (v >> 16) & 0xff;
    b[3] = (v >> 24) & 0xff;
}

static uint32_t get_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/*
 * How long a request may wait for the card: the kernel's request timeout.
 * Z90CRYPT_CARD_TIMEOUT_MS shortens it for tests; secure_getenv ignores
 * it in a setuid or otherwise privileged (AT_SECURE) process.
 */
static long timeout_ms(void)
{
    const char *v = secure_getenv("Z90CRYPT_CARD_TIMEOUT_MS");
    char *end;
    long t;

    if (v == NULL || *v == 0)
        return TIMEOUT_MS;
    errno = 0;
    t = strtol(v, &end, 10);
    if (errno != 0 || *end != 0 || t <= 0 || t > TIMEOUT_MS)
        return TIMEOUT_MS;
    return t;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until `s` is ready for `events`; ETIME at the deadline. */
static int wait_ready(int s, short events, long long deadline)
{
    for (;;) {
        struct pollfd p = {.fd = s, .events = events};
        long long left = deadline - now_ms();
        int n;

        if (left <= 0)
            return ETIME;
        n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return EIO;
    }
}

static int write_all(int s, const unsigned char *b, size_t n, long long deadline)
{
    while (n > 0) {
        int rc = wait_ready(s, POLLOUT, deadline);
        ssize_t w;
        if (rc != 0)
            return rc;
        w = send(s, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w <= 0)
            return EIO;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int s, unsigned char *b, size_t n, long long deadline)
{
    while (n > 0) {
        int rc = wait_ready(s, POLLIN, deadline);
        ssize_t r;
        if (rc != 0)
            return rc;
        r = recv(s, b, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return EIO;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/*
 * A connection to the card, or -1 with *rc set: ENODEV when none listens
 * or when it runs as another uid than ours (other than root), which must
 * not see the key.
 */
static int connect_card(int *rc)
{
    const char *path = card_socket();
    struct sockaddr_un addr;
    struct ucred peer;
    socklen_t peer_len = sizeof(peer);
    int s;

    *rc = ENODEV;
    if (path == NULL)
        return -1;
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) != 0
        || getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0
        || peer_len != sizeof(peer) || (peer.uid != 0 && peer.uid != geteuid())) {
        close(s);
        return -1;
    }
    *rc = 0;
    return s;
}

/*
 * One exchange: a header (kind, pid, length) and the payload out, then
 * the card's errno and `answer_len` bytes (an RSA answer) or a length
 * and text (a control answer) back. Returns the card's errno; ENODEV when
 * no card (of ours) listens, ETIME when it does not answer in time, EIO
 * when the exchange breaks.
 */
int exchange(unsigned char kind, uint32_t length, const unsigned char *payload,
             size_t payload_len, unsigned char *answer, size_t answer_len)
{
    long long deadline = now_ms() + timeout_ms();
    unsigned char head[9], word[4];
    int rc, s = connect_card(&rc);

    if (s < 0)
        return rc;
    head[0] = kind;
    put_le32(head + 1, (uint32_t)getpid());
    put_le32(head + 5, length);
    if ((rc = write_all(s, head, sizeof(head), deadline)) != 0
        || (rc = write_all(s, payload, payload_len, deadline)) != 0
        || (rc = read_all(s, word, sizeof(word), deadline)) != 0)
        goto out;
    if (kind == KIND_CONTROL) {
        uint32_t n = get_le32(word);
        rc = EIO;
        if (n >= answer_len || (rc = read_all(s, answer, n, deadline)) != 0)
            goto out;
        answer[n] = 0;
    } else {
        if ((rc = read_all(s, answer, answer_len, deadline)) != 0)
            goto out;
        rc = (int)get_le32(word);
    }
out:
    close(s);
    return rc;
}
