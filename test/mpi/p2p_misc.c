/* Point-to-point semantics on device buffers, 2 to 4 ranks: interoperation
   with plain MPI (PMPI) on the other side, wildcards, Probe, truncation,
   completion order of mixed host and device requests, Request_free of an
   active send, Cancel of a posted receive, Sendrecv(_replace) around a ring,
   and refusal of calls that do not take device buffers yet. */
#include "mpit_read.h"
#include "p2p_common.h"

/* The library's counters, through MPI_T (mpit_read.c). */
static void rest_messages(unsigned long *sent, unsigned long *received)
{
    *sent = (unsigned long)mpit_value("mpigpu_p2p_rest_sent");
    *received = (unsigned long)mpit_value("mpigpu_p2p_rest_received");
}

static void host_receives(unsigned long *inplace, unsigned long *landed)
{
    *inplace = (unsigned long)mpit_value("mpigpu_p2p_host_recv_inplace");
    *landed = (unsigned long)mpit_value("mpigpu_p2p_host_recv_landed");
}

/* Host receives in place that read no header (before any grant request). */
static unsigned long host_bare(void)
{
    return (unsigned long)mpit_value("mpigpu_p2p_host_recv_bare");
}

static int rank, size;

static void sync_token(int from, int to)
{
    if (rank == from)
        MPI_Send(NULL, 0, MPI_BYTE, to, 0, MPI_COMM_WORLD);
    else if (rank == to)
        MPI_Recv(NULL, 0, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Plain MPI (PMPI_) on one side, mpigpu with a device buffer on the other, in
   both directions, with a receive count equal to and larger than the message.
   The large count makes messages longer than one staging chunk when the test
   runs with a small MPIGPU_STAGING_MAX (testlist: p2p_misc_chunk). */
static void test_interop(void)
{
    static const int counts[2] = {3, 4000};
    /* A device message of at least one first piece (in pieces, or plain as
       bytes) needs mpigpu on the receiving side: it goes to MPI_Recv on a
       host buffer (test_host_recv has the other receive calls); a shorter
       one, sent as the type's packed twin, to PMPI_Recv. */
    for (int ti = 0; ti < NTYPES; ti++) {
        MPI_Datatype t = types[ti];
        int tsize = 0;
        MPI_Type_size(t, &tsize);
        for (int ci = 0; ci < 2; ci++)
            for (int dir = 0; dir < 2; dir++)
                for (int extra = 0; extra < 2; extra++) {
                    int count = counts[ci], rcount = count * (1 + extra);
                    /* In pieces, or plain as bytes from a first piece's length
                       under a chunking protocol (mgp2p_plain_type): only
                       receives through mpigpu take those (MPICH truncates
                       bytes received into a padded struct). */
                    int chunked = p2p_in_pieces((long long)count * tsize) ||
                                  p2p_host_watched((long long)count * tsize);
                    size_t n = buf_size(t, rcount);
                    snprintf(where, sizeof(where), "interop %s count %d recv %d %s", tnames[ti],
                             count, rcount,
                             dir ? chunked ? "device->MPI_Recv(host)" : "device->PMPI_Recv"
                                 : "PMPI_Send->device");
                    if (rank == 0) {
                        unsigned char *s = buf_make(n, 11, dir);
                        if (dir)
                            CHECK(MPI_Send(s + ORIGIN, count, t, 1, 7, MPI_COMM_WORLD) ==
                                  MPI_SUCCESS);
                        else
                            CHECK(PMPI_Send(s + ORIGIN, count, t, 1, 7, MPI_COMM_WORLD) ==
                                  MPI_SUCCESS);
                        buf_free(s, dir);
                    } else if (rank == 1) {
                        unsigned char *want = expected(t, count, 11, 99);
                        unsigned char *r = buf_make(n, 99, !dir);
                        MPI_Status st;
                        int got = -1;
                        /* expected() covers count instances; the rest of the
                           larger receive buffer must keep its poison. */
                        unsigned char *w = malloc(n);
                        fill(w, n, 99);
                        memcpy(w, want, buf_size(t, count) < n ? buf_size(t, count) : n);
                        if (dir && chunked)
                            CHECK(MPI_Recv(r + ORIGIN, rcount, t, 0, 7, MPI_COMM_WORLD, &st) ==
                                  MPI_SUCCESS);
                        else if (dir)
                            CHECK(PMPI_Recv(r + ORIGIN, rcount, t, 0, 7, MPI_COMM_WORLD, &st) ==
                                  MPI_SUCCESS);
                        else
                            CHECK(MPI_Recv(r + ORIGIN, rcount, t, 0, 7, MPI_COMM_WORLD, &st) ==
                                  MPI_SUCCESS);
                        MPI_Get_count(&st, t, &got);
                        CHECK(got == count);
                        CHECK(buf_equal(r, w, n, !dir));
                        buf_free(r, !dir);
                        free(w);
                        free(want);
                    }
                }
    }
}

/* A device send received into host memory through every receive call, with
   a dense and two strided host datatypes, 4000 instances (above one chunk of
   a 64K pool: under MPIGPU_P2P_PROTOCOL=chunked a chunked message, which the
   host receive takes whole), then a truncated one, and a plain host message
   of exactly one chunk (16K) that must not be taken for a chunked one. */
static void test_host_recv(void)
{
    static const int tis[3] = {0, 1, 4};
    static const char *const calls[7] = {"Recv",      "Irecv+Test", "Mprobe+Mrecv",
                                         "Recv_init", "Sendrecv",   "Sendrecv_replace",
                                         "Recv(ANY)"};
    const int count = 4000;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 7; k++) {
            MPI_Datatype t = types[tis[i]];
            size_t n = buf_size(t, count);
            /* MPICH 4.0.2's own MPI_Sendrecv_replace sends more bytes than
               the padded struct holds (MPI_ERR_TRUNCATE on a receive of the
               same count), so that case runs only where mpigpu does it. */
            int tsize = 0;
            MPI_Type_size(t, &tsize);
            if (k == 5 && tis[i] == 4 && !p2p_host_watched((long long)count * tsize))
                continue;
            unsigned data = 20 + (unsigned)k, poison = 30 + (unsigned)k;
            snprintf(where, sizeof(where), "host receive %s %s", tnames[tis[i]], calls[k]);
            if (rank == 0) {
                unsigned char *s = buf_make(n, data, 1);
                CHECK(MPI_Send(s + ORIGIN, count, t, 1, 8, MPI_COMM_WORLD) == MPI_SUCCESS);
                if (k == 4 || k == 5) {
                    /* What rank 1 sent back: one int, or its whole buffer
                       before the receive replaced it. */
                    unsigned char *back = buf_make(n, 0, 0);
                    MPI_Status st;
                    int got = -1;
                    CHECK(MPI_Recv(back + ORIGIN, k == 4 ? 1 : count, k == 4 ? MPI_INT : t, 1, 9,
                                   MPI_COMM_WORLD, &st) == MPI_SUCCESS);
                    MPI_Get_count(&st, k == 4 ? MPI_INT : t, &got);
                    CHECK(got == (k == 4 ? 1 : count));
                    if (k == 5) {
                        unsigned char *w = expected(t, count, poison, 0);
                        CHECK(buf_equal(back, w, n, 0));
                        free(w);
                    }
                    buf_free(back, 0);
                }
                buf_free(s, 1);
            } else if (rank == 1) {
                unsigned char *want = expected(t, count, data, poison);
                unsigned char *r = buf_make(n, poison, 0);
                MPI_Status st;
                MPI_Request q;
                MPI_Message m;
                int got = -1, flag = 0, one = 5;
                unsigned long rs0, rr0, rs1, rr1;
                void *rb = r + ORIGIN;
                rest_messages(&rs0, &rr0);
                switch (k) {
                case 0:
                    CHECK(MPI_Recv(rb, count, t, 0, 8, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
                    break;
                case 1:
                    CHECK(MPI_Irecv(rb, count, t, 0, 8, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
                    while (!flag)
                        CHECK(MPI_Test(&q, &flag, &st) == MPI_SUCCESS);
                    break;
                case 2:
                    CHECK(MPI_Mprobe(0, 8, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
                    CHECK(MPI_Mrecv(rb, count, t, &m, &st) == MPI_SUCCESS);
                    break;
                case 3:
                    CHECK(MPI_Recv_init(rb, count, t, 0, 8, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
                    CHECK(MPI_Start(&q) == MPI_SUCCESS);
                    CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS);
                    CHECK(MPI_Request_free(&q) == MPI_SUCCESS);
                    break;
                case 4:
                    CHECK(MPI_Sendrecv(&one, 1, MPI_INT, 0, 9, rb, count, t, 0, 8, MPI_COMM_WORLD,
                                       &st) == MPI_SUCCESS);
                    break;
                case 5:
                    CHECK(MPI_Sendrecv_replace(rb, count, t, 0, 9, 0, 8, MPI_COMM_WORLD, &st) ==
                          MPI_SUCCESS);
                    break;
                default:
                    CHECK(MPI_Recv(rb, count, t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                                   &st) == MPI_SUCCESS);
                    break;
                }
                MPI_Get_count(&st, t, &got);
                CHECK(got == count && st.MPI_SOURCE == 0 && st.MPI_TAG == 8);
                CHECK(buf_equal(r, want, n, 0));
                /* The rest of a message in pieces came as one message when
                   the host receive asked for it. */
                rest_messages(&rs1, &rr1);
                CHECK(rs1 == rs0 &&
                      rr1 - rr0 == (p2p_host_rest() && p2p_in_pieces((long long)count * tsize)));
                buf_free(r, 0);
                free(want);
            }
        }

    /* osu_bw's window: four receives pending on one host buffer, four device
       sends of the same data.  Under the chunked protocol a first piece's
       header in a shared buffer could be overwritten before it was read, and
       both sides hung (mpigpu-pingpong -W 4 did on the H200 pair; this test
       did not catch it on the 2-core VM, so it checks the pattern, not the
       race); the buffer ends with the data. */
    for (int i = 0; i < 20; i++) {
        MPI_Datatype t = types[tis[i % 2]];
        size_t n = buf_size(t, count);
        snprintf(where, sizeof(where), "host receive window %s", tnames[tis[i % 2]]);
        if (rank == 0) {
            unsigned char *s = buf_make(n, 40, 1);
            MPI_Request q[4];
            MPI_Status st[4];
            unsigned long rs0, rr0, rs1, rr1;
            int tsize = 0;
            MPI_Type_size(t, &tsize);
            rest_messages(&rs0, &rr0);
            for (int w = 0; w < 4; w++)
                CHECK(MPI_Isend(s + ORIGIN, count, t, 1, 14, MPI_COMM_WORLD, &q[w]) == MPI_SUCCESS);
            CHECK(MPI_Waitall(4, q, st) == MPI_SUCCESS);
            rest_messages(&rs1, &rr1);
            CHECK(rr1 == rr0 &&
                  rs1 - rs0 == 4u * (p2p_host_rest() && p2p_in_pieces((long long)count * tsize)));
            buf_free(s, 1);
        } else if (rank == 1) {
            unsigned char *want = expected(t, count, 40, 41), *r = buf_make(n, 41, 0);
            MPI_Request q[4];
            MPI_Status st[4];
            unsigned long in0, land0, in1, land1, bare0 = host_bare();
            int tsize = 0;
            MPI_Type_size(t, &tsize);
            host_receives(&in0, &land0);
            for (int w = 0; w < 4; w++)
                CHECK(MPI_Irecv(r + ORIGIN, count, t, 0, 14, MPI_COMM_WORLD, &q[w]) == MPI_SUCCESS);
            CHECK(MPI_Waitall(4, q, st) == MPI_SUCCESS);
            /* Where mpigpu takes them: before any grant request a dense
               layout's receives all in place bare; after it, a dense
               layout's first receive in place, the others in place only
               once no other overlaps.  A strided one lands. */
            host_receives(&in1, &land1);
            unsigned long bare = host_bare() - bare0;
            if (p2p_host_watched((long long)count * tsize))
                CHECK(in1 - in0 + land1 - land0 + bare == 4 &&
                      (tis[i % 2] == 0 ? bare + in1 - in0 >= 1 : in1 == in0 && bare == 0));
            else
                CHECK(in1 == in0 && land1 == land0 && bare == 0);
            for (int w = 0; w < 4; w++) {
                int got = -1;
                MPI_Get_count(&st[w], t, &got);
                CHECK(got == count);
            }
            CHECK(buf_equal(r, want, n, 0));
            buf_free(r, 0);
            free(want);
        }
    }

    /* Truncated: a receive of half the instances (still above one chunk)
       fails with MPI_ERR_TRUNCATE and writes nothing outside its buffer. */
    MPI_Datatype t = types[1];
    snprintf(where, sizeof(where), "host receive truncated");
    if (rank == 0) {
        unsigned char *s = buf_make(buf_size(t, count), 3, 1);
        CHECK(MPI_Send(s + ORIGIN, count, t, 1, 10, MPI_COMM_WORLD) == MPI_SUCCESS);
        buf_free(s, 1);
    } else if (rank == 1) {
        size_t half = buf_size(t, count / 2);
        unsigned char *r = buf_make(half, 4, 0);
        int rc = MPI_Recv(r + ORIGIN, count / 2, t, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE);
        buf_free(r, 0);
    }

    /* Bytes that end inside an instance, into a strided host receive (only
       where mpigpu takes it: MPICH 4.0.2 itself fails such a receive).  The
       whole instances unpack as PMPI_Unpack does; the 3 bytes left go to the
       start of the next instance's first double. */
    int whole = count / 2, len = whole * 32 + 3; /* types[1]: 32 packed bytes, extent 80 */
    int taken = p2p_host_watched((long long)count * 32);
    snprintf(where, sizeof(where), "host receive partial instance");
    if (rank == 0 && taken) {
        unsigned char *b = malloc(len);
        fill(b, len, 6);
        CHECK(MPI_Send(b, len, MPI_BYTE, 1, 12, MPI_COMM_WORLD) == MPI_SUCCESS);
        free(b);
    } else if (rank == 1 && taken) {
        size_t n = buf_size(t, count);
        unsigned char *r = buf_make(n, 7, 0), *w = buf_make(n, 7, 0), *b = malloc(len);
        MPI_Status st;
        int got = -1, pos = 0;
        fill(b, len, 6);
        PMPI_Unpack(b, len, &pos, w + ORIGIN, whole, t, MPI_COMM_WORLD);
        memcpy(w + ORIGIN + (size_t)whole * 80, b + pos, 3);
        CHECK(MPI_Recv(r + ORIGIN, count, t, 0, 12, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == len);
        CHECK(memcmp(r, w, n) == 0);
        free(r);
        free(w);
        free(b);
    }

    /* Exactly a first piece's length of a host send, bytes that are not a
       header. */
    snprintf(where, sizeof(where), "host receive one chunk");
    const int chunk = p2p_first_len() ? (int)p2p_first_len() : 16384;
    unsigned char *b = malloc(chunk);
    if (rank == 0) {
        fill(b, chunk, 5);
        CHECK(MPI_Send(b, chunk, MPI_BYTE, 1, 11, MPI_COMM_WORLD) == MPI_SUCCESS);
    } else if (rank == 1) {
        unsigned char *w = malloc(chunk);
        MPI_Status st;
        int got = -1;
        fill(w, chunk, 5);
        memset(b, 0, chunk);
        CHECK(MPI_Recv(b, chunk, MPI_BYTE, 0, 11, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == chunk && memcmp(b, w, chunk) == 0);
        free(w);
    }
    free(b);
}

static void test_wildcard_probe(void)
{
    MPI_Datatype t = types[1];
    size_t n = buf_size(t, 2);
    unsigned char *want = expected(t, 2, 3, 4);
    for (int k = 0; k < 3; k++) {
        snprintf(where, sizeof(where), "wildcard %d", k);
        if (rank == 0) {
            unsigned char *s = buf_make(n, 3, 1);
            CHECK(MPI_Send(s + ORIGIN, 2, t, 1, 40 + k, MPI_COMM_WORLD) == MPI_SUCCESS);
            buf_free(s, 1);
        } else if (rank == 1) {
            unsigned char *r = buf_make(n, 4, 1);
            MPI_Status st, pst;
            MPI_Request q;
            int got = -1, bytes = -1, flag = 0;
            if (k == 0) {
                CHECK(MPI_Recv(r + ORIGIN, 2, t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                               &st) == MPI_SUCCESS);
            } else if (k == 1) {
                CHECK(MPI_Irecv(r + ORIGIN, 2, t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                                &q) == MPI_SUCCESS);
                CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS);
            } else {
                /* Probe, then receive into the device buffer. */
                CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &pst) == MPI_SUCCESS);
                MPI_Get_count(&pst, MPI_BYTE, &bytes);
                CHECK(bytes == 64 && pst.MPI_TAG == 42);
                do
                    MPI_Iprobe(0, 42, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                while (!flag);
                CHECK(MPI_Recv(r + ORIGIN, 2, t, pst.MPI_SOURCE, pst.MPI_TAG, MPI_COMM_WORLD,
                               &st) == MPI_SUCCESS);
            }
            MPI_Get_count(&st, t, &got);
            CHECK(got == 2 && st.MPI_SOURCE == 0 && st.MPI_TAG == 40 + k);
            CHECK(buf_equal(r, want, n, 1));
            buf_free(r, 1);
        }
    }
    free(want);
}

static void test_truncate(void)
{
    MPI_Datatype t = types[1];
    size_t n = buf_size(t, 3);
    for (int k = 0; k < 2; k++) {
        snprintf(where, sizeof(where), "truncate %s", k ? "Irecv" : "Recv");
        if (rank == 0) {
            unsigned char *s = buf_make(n, 3, 1);
            MPI_Send(s + ORIGIN, 3, t, 1, 50, MPI_COMM_WORLD);
            buf_free(s, 1);
        } else if (rank == 1) {
            unsigned char *r = buf_make(n, 4, 1);
            MPI_Request q;
            int rc, cls = -1;
            if (k == 0) {
                rc = MPI_Recv(r + ORIGIN, 1, t, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Irecv(r + ORIGIN, 1, t, 0, 50, MPI_COMM_WORLD, &q);
                rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
            }
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE);
            buf_free(r, 1);
        }
    }
}

/* Waitany/Waitsome/Testsome return requests in completion order, host and
   device mixed in one array. */
static void test_order(void)
{
    MPI_Datatype t = types[2];
    size_t n = buf_size(t, 1);
    for (int form = 0; form < 3; form++) {
        for (int devfirst = 0; devfirst < 2; devfirst++) {
            snprintf(where, sizeof(where), "order form %d devfirst %d", form, devfirst);
            if (rank == 0) {
                unsigned char *s = buf_make(n, 5, 1);
                int h = 1234;
                for (int i = 0; i < 2; i++) {
                    if ((i == 0) == devfirst)
                        MPI_Send(s + ORIGIN, 1, t, 1, 60, MPI_COMM_WORLD);
                    else
                        MPI_Send(&h, 1, MPI_INT, 1, 61, MPI_COMM_WORLD);
                    if (i == 0)
                        sync_token(1, 0);
                }
                buf_free(s, 1);
            } else if (rank == 1) {
                unsigned char *r = buf_make(n, 6, 1), *want = expected(t, 1, 5, 6);
                int h = 0, idx[2], out = 0, first = devfirst ? 0 : 1;
                MPI_Request q[2];
                MPI_Status st[2];
                MPI_Irecv(r + ORIGIN, 1, t, 0, 60, MPI_COMM_WORLD, &q[0]);
                MPI_Irecv(&h, 1, MPI_INT, 0, 61, MPI_COMM_WORLD, &q[1]);
                for (int i = 0; i < 2; i++) {
                    int want_idx = i == 0 ? first : 1 - first;
                    if (form == 0) {
                        CHECK(MPI_Waitany(2, q, &idx[0], st) == MPI_SUCCESS);
                        CHECK(idx[0] == want_idx && st[0].MPI_TAG == 60 + want_idx);
                    } else {
                        do
                            CHECK((form == 1 ? MPI_Waitsome(2, q, &out, idx, st)
                                             : MPI_Testsome(2, q, &out, idx, st)) == MPI_SUCCESS);
                        while (out == 0);
                        CHECK(out == 1 && idx[0] == want_idx && st[0].MPI_TAG == 60 + want_idx);
                    }
                    if (i == 0)
                        sync_token(1, 0);
                }
                CHECK(h == 1234 && buf_equal(r, want, n, 1));
                free(want);
                buf_free(r, 1);
            }
        }
    }
}

static void test_free_cancel(void)
{
    MPI_Datatype t = types[3];
    size_t n = buf_size(t, 3);
    snprintf(where, sizeof(where), "Request_free of an active device send");
    if (rank == 0) {
        unsigned char *s = buf_make(n, 8, 1);
        MPI_Request q;
        CHECK(MPI_Isend(s + ORIGIN, 3, t, 1, 70, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        CHECK(MPI_Request_free(&q) == MPI_SUCCESS && q == MPI_REQUEST_NULL);
        sync_token(1, 0); /* the receiver has the data: the buffer may go */
        buf_free(s, 1);
    } else if (rank == 1) {
        unsigned char *r = buf_make(n, 9, 1), *want = expected(t, 3, 8, 9);
        CHECK(MPI_Recv(r + ORIGIN, 3, t, 0, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(buf_equal(r, want, n, 1));
        sync_token(1, 0);
        free(want);
        buf_free(r, 1);
    }
    snprintf(where, sizeof(where), "Cancel of a posted device receive");
    if (rank == 1) {
        unsigned char *r = buf_make(n, 9, 1), *want = malloc(n);
        MPI_Request q;
        MPI_Status st;
        int c = 0;
        fill(want, n, 9);
        CHECK(MPI_Irecv(r + ORIGIN, 3, t, 0, 71, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        CHECK(MPI_Cancel(&q) == MPI_SUCCESS);
        CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS && q == MPI_REQUEST_NULL);
        MPI_Test_cancelled(&st, &c);
        CHECK(c == 1);
        CHECK(buf_equal(r, want, n, 1));
        free(want);
        buf_free(r, 1);
    }
}

/* The persistent large-count forms on device buffers, started 3 times each,
   and a count past INT_MAX refused before anything moves. */
static void test_init_c(void)
{
    MPI_Datatype t = types[4];
    size_t n = buf_size(t, 3);
    for (int how = 0; how < 3; how++) {
        snprintf(where, sizeof(where), "%s_init_c",
                 how == 0   ? "Ssend"
                 : how == 1 ? "Rsend"
                            : "Send");
        MPI_Request q = MPI_REQUEST_NULL;
        if (rank == 0) {
            unsigned char *s = buf_make(n, 31, 1);
            if (how == 0)
                CHECK(MPI_Ssend_init_c(s + ORIGIN, 3, t, 1, 90, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            else if (how == 1)
                CHECK(MPI_Rsend_init_c(s + ORIGIN, 3, t, 1, 90, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            else
                CHECK(MPI_Send_init_c(s + ORIGIN, 3, t, 1, 90, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            CHECK(MPI_Ssend_init_c(s + ORIGIN, (MPI_Count)1 << 40, t, 1, 90, MPI_COMM_WORLD, &q) ==
                  MPI_ERR_COUNT);
            for (int k = 0; k < 3; k++) {
                sync_token(1, 0); /* the receive is posted: Rsend may go */
                CHECK(MPI_Start(&q) == MPI_SUCCESS);
                CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            }
            CHECK(MPI_Request_free(&q) == MPI_SUCCESS);
            buf_free(s, 1);
        } else if (rank == 1) {
            unsigned char *r = buf_make(n, 32, 1);
            unsigned char *want = expected(t, 3, 31, 32);
            CHECK(MPI_Recv_init_c(r + ORIGIN, 3, t, 0, 90, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            for (int k = 0; k < 3; k++) {
                MPI_Status st;
                MPI_Count got = -1;
                CHECK(MPI_Start(&q) == MPI_SUCCESS);
                sync_token(1, 0);
                CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS);
                MPI_Get_count_c(&st, t, &got);
                CHECK(got == 3);
                CHECK(buf_equal(r, want, n, 1));
            }
            CHECK(MPI_Request_free(&q) == MPI_SUCCESS);
            free(want);
            buf_free(r, 1);
        }
    }
}

/* Each rank sends to the right and receives from the left. */
static void test_ring(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int ti = 0; ti < NTYPES; ti++) {
        MPI_Datatype t = types[ti];
        size_t n = buf_size(t, 3);
        for (int mode = 0; mode < 4; mode++) {
            int sdev = mode & 1, rdev = (mode >> 1) & 1;
            snprintf(where, sizeof(where), "Sendrecv ring %s %d->%d", tnames[ti], sdev, rdev);
            unsigned char *s = buf_make(n, 20 + (unsigned)rank, sdev);
            unsigned char *r = buf_make(n, 40, rdev);
            unsigned char *want = expected(t, 3, 20 + (unsigned)left, 40);
            MPI_Status st;
            int got = -1;
            /* Odd types take the large-count form. */
            if (ti % 2)
                CHECK(MPI_Sendrecv_c(s + ORIGIN, 3, t, right, 80, r + ORIGIN, 3, t, MPI_ANY_SOURCE,
                                     80, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            else
                CHECK(MPI_Sendrecv(s + ORIGIN, 3, t, right, 80, r + ORIGIN, 3, t, MPI_ANY_SOURCE,
                                   80, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, t, &got);
            CHECK(got == 3 && st.MPI_SOURCE == left && st.MPI_TAG == 80);
            CHECK(buf_equal(r, want, n, rdev));
            free(want);
            buf_free(s, sdev);
            buf_free(r, rdev);
        }
        snprintf(where, sizeof(where), "Sendrecv_replace ring %s", tnames[ti]);
        /* In place: bytes outside the type keep this rank's own fill. */
        unsigned char *b = buf_make(n, 60 + (unsigned)rank, 1);
        unsigned char *want = expected(t, 3, 60 + (unsigned)left, 60 + (unsigned)rank);
        MPI_Status st;
        if (ti % 2)
            CHECK(MPI_Sendrecv_replace_c(b + ORIGIN, 3, t, right, 81, left, 81, MPI_COMM_WORLD,
                                         &st) == MPI_SUCCESS);
        else
            CHECK(MPI_Sendrecv_replace(b + ORIGIN, 3, t, right, 81, left, 81, MPI_COMM_WORLD,
                                       &st) == MPI_SUCCESS);
        CHECK(st.MPI_SOURCE == left && buf_equal(b, want, n, 1));
        free(want);
        buf_free(b, 1);
    }
}

static void test_refuse(void)
{
    unsigned char *d = buf_make(64, 1, 1), h[64] = {0};
    snprintf(where, sizeof(where), "refusals");
    /* Collectives take device buffers (test/mpi/coll.c covers them). */
    CHECK(MPI_Bcast(d, 4, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPI_Allreduce(h, d, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    MPI_Win win;
    int wbuf[4] = {0};
    MPI_Win_create(wbuf, sizeof(wbuf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(d, 4, MPI_INT, 0, 0, 4, MPI_INT, win) == MPI_ERR_BUFFER);
    CHECK(MPI_Get(d, 4, MPI_INT, 0, 0, 4, MPI_INT, win) == MPI_ERR_BUFFER);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    /* Host buffers still work. */
    int v = rank == 0 ? 77 : 0;
    CHECK(MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS && v == 77);
    buf_free(d, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (mpit_read_init()) {
        fprintf(stderr, "p2p_misc: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    types_create();
    if (size >= 2) {
        test_interop();
        test_host_recv();
        test_wildcard_probe();
        test_truncate();
        test_order();
        test_free_cancel();
        test_init_c();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    test_ring();
    test_refuse();
    types_free();
    mpit_read_finalize();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
    MPI_Finalize();
    return all != 0;
}
