/*
 * mgtest_types: every predefined datatype that MPICH 4.0.2's mpi.h defines,
 * for tests that go through them all (test/mpi/host_classify.c,
 * test/unit/test_datatype.c).  Written from mpi.h and the standard's tables
 * of predefined types, never from the library's own table
 * (src/datatype/layout.c), which the tests check against this one.
 *
 * Not listed: MPI_DATATYPE_NULL, and MPI_INTEGER16, which MPICH 4.0.2
 * defines as MPI_DATATYPE_NULL (it has no such type).  Aliases are listed
 * under each name, after the type they name (MPI_LONG_LONG, MPI_C_COMPLEX).
 *
 * Test-only: needs <mpi.h> alone, so that unit tests, which link no part of
 * the library but the folder they test, include it too.
 */
#ifndef MGTEST_TYPES_H
#define MGTEST_TYPES_H

#include <mpi.h>
#include <stddef.h>

/* What a type is (mgtest_type_t.flags). */
enum {
    MGTEST_DT_C = 1 << 0,       /* a type of MPI's C binding, MPI_BYTE and MPI_PACKED included */
    MGTEST_DT_FORTRAN = 1 << 1, /* a Fortran type (its handle works from C as well) */
    MGTEST_DT_CXX = 1 << 2,     /* a C++ type (MPI_CXX_*) */
    MGTEST_DT_PAIR = 1 << 3,    /* a value and an index, for MPI_MINLOC and MPI_MAXLOC */
    MGTEST_DT_ALIAS = 1 << 4,   /* the same handle as an entry before it */
    MGTEST_DT_REMOVED = 1 << 5, /* MPI_LB and MPI_UB: removed in MPI 3.0, still in MPICH */
    MGTEST_DT_MPIX = 1 << 6,    /* an MPICH extension, in no standard */
};

/* A type of the standard's C binding that every layer must know: C, not
   removed, not an extension. */
#define MGTEST_DT_STANDARD_C(flags)                                                                \
    (((flags) & (MGTEST_DT_C | MGTEST_DT_REMOVED | MGTEST_DT_MPIX)) == MGTEST_DT_C)

typedef struct mgtest_type {
    MPI_Datatype dt;
    const char *name;
    /* MPI_Type_size's answer where the language fixes it: sizeof of the C
       type, the number in a sized Fortran type's name; -1 where a compiler
       other than C's chooses it (MPI_INTEGER, MPI_CXX_BOOL, ...). */
    int size;
    unsigned flags;
} mgtest_type_t;

#define MGTEST_PAIR(v) ((int)(sizeof(v) + sizeof(int)))
#define MGTEST_C(t, sz)                                                                            \
    {                                                                                              \
        t, #t, (int)(sz), MGTEST_DT_C                                                              \
    }
#define MGTEST_F(t, sz)                                                                            \
    {                                                                                              \
        t, #t, sz, MGTEST_DT_FORTRAN                                                               \
    }

__attribute__((unused)) static const mgtest_type_t mgtest_types[] = {
    /* C */
    MGTEST_C(MPI_CHAR, sizeof(char)),
    MGTEST_C(MPI_SIGNED_CHAR, sizeof(signed char)),
    MGTEST_C(MPI_UNSIGNED_CHAR, sizeof(unsigned char)),
    MGTEST_C(MPI_BYTE, 1),
    MGTEST_C(MPI_WCHAR, sizeof(wchar_t)),
    MGTEST_C(MPI_SHORT, sizeof(short)),
    MGTEST_C(MPI_UNSIGNED_SHORT, sizeof(unsigned short)),
    MGTEST_C(MPI_INT, sizeof(int)),
    MGTEST_C(MPI_UNSIGNED, sizeof(unsigned)),
    MGTEST_C(MPI_LONG, sizeof(long)),
    MGTEST_C(MPI_UNSIGNED_LONG, sizeof(unsigned long)),
    MGTEST_C(MPI_LONG_LONG_INT, sizeof(long long)),
    {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), MGTEST_DT_C | MGTEST_DT_ALIAS},
    MGTEST_C(MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long)),
    MGTEST_C(MPI_FLOAT, sizeof(float)),
    MGTEST_C(MPI_DOUBLE, sizeof(double)),
    MGTEST_C(MPI_LONG_DOUBLE, sizeof(long double)),
    MGTEST_C(MPI_C_BOOL, sizeof(_Bool)),
    MGTEST_C(MPI_INT8_T, 1),
    MGTEST_C(MPI_INT16_T, 2),
    MGTEST_C(MPI_INT32_T, 4),
    MGTEST_C(MPI_INT64_T, 8),
    MGTEST_C(MPI_UINT8_T, 1),
    MGTEST_C(MPI_UINT16_T, 2),
    MGTEST_C(MPI_UINT32_T, 4),
    MGTEST_C(MPI_UINT64_T, 8),
    MGTEST_C(MPI_AINT, sizeof(MPI_Aint)),
    MGTEST_C(MPI_OFFSET, sizeof(MPI_Offset)),
    MGTEST_C(MPI_COUNT, sizeof(MPI_Count)),
    MGTEST_C(MPI_C_FLOAT_COMPLEX, sizeof(float _Complex)),
    {MPI_C_COMPLEX, "MPI_C_COMPLEX", sizeof(float _Complex), MGTEST_DT_C | MGTEST_DT_ALIAS},
    MGTEST_C(MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex)),
    MGTEST_C(MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex)),
    MGTEST_C(MPI_PACKED, 1),
    /* C pairs: the value then an int; MPI's size leaves the padding out */
    {MPI_FLOAT_INT, "MPI_FLOAT_INT", MGTEST_PAIR(float), MGTEST_DT_C | MGTEST_DT_PAIR},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", MGTEST_PAIR(double), MGTEST_DT_C | MGTEST_DT_PAIR},
    {MPI_LONG_INT, "MPI_LONG_INT", MGTEST_PAIR(long), MGTEST_DT_C | MGTEST_DT_PAIR},
    {MPI_2INT, "MPI_2INT", MGTEST_PAIR(int), MGTEST_DT_C | MGTEST_DT_PAIR},
    {MPI_SHORT_INT, "MPI_SHORT_INT", MGTEST_PAIR(short), MGTEST_DT_C | MGTEST_DT_PAIR},
    {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", MGTEST_PAIR(long double),
     MGTEST_DT_C | MGTEST_DT_PAIR},
    /* removed from the standard, still defined: zero bytes, bounds markers */
    {MPI_LB, "MPI_LB", 0, MGTEST_DT_C | MGTEST_DT_REMOVED},
    {MPI_UB, "MPI_UB", 0, MGTEST_DT_C | MGTEST_DT_REMOVED},
    /* MPICH's extension: a 16-bit float */
    {MPIX_C_FLOAT16, "MPIX_C_FLOAT16", 2, MGTEST_DT_C | MGTEST_DT_MPIX},
    /* C++ */
    {MPI_CXX_BOOL, "MPI_CXX_BOOL", -1, MGTEST_DT_CXX},
    {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", sizeof(float _Complex), MGTEST_DT_CXX},
    {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", sizeof(double _Complex), MGTEST_DT_CXX},
    {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", sizeof(long double _Complex),
     MGTEST_DT_CXX},
    /* Fortran */
    MGTEST_F(MPI_CHARACTER, 1),
    MGTEST_F(MPI_LOGICAL, -1),
    MGTEST_F(MPI_INTEGER, -1),
    MGTEST_F(MPI_REAL, -1),
    MGTEST_F(MPI_DOUBLE_PRECISION, -1),
    MGTEST_F(MPI_COMPLEX, -1),
    MGTEST_F(MPI_DOUBLE_COMPLEX, -1),
    MGTEST_F(MPI_INTEGER1, 1),
    MGTEST_F(MPI_INTEGER2, 2),
    MGTEST_F(MPI_INTEGER4, 4),
    MGTEST_F(MPI_INTEGER8, 8),
    MGTEST_F(MPI_REAL4, 4),
    MGTEST_F(MPI_REAL8, 8),
    MGTEST_F(MPI_REAL16, 16),
    MGTEST_F(MPI_COMPLEX8, 8),
    MGTEST_F(MPI_COMPLEX16, 16),
    MGTEST_F(MPI_COMPLEX32, 32),
    /* Fortran pairs: two of the same type */
    {MPI_2INTEGER, "MPI_2INTEGER", -1, MGTEST_DT_FORTRAN | MGTEST_DT_PAIR},
    {MPI_2REAL, "MPI_2REAL", -1, MGTEST_DT_FORTRAN | MGTEST_DT_PAIR},
    {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", -1, MGTEST_DT_FORTRAN | MGTEST_DT_PAIR},
};
#define MGTEST_NTYPES ((int)(sizeof(mgtest_types) / sizeof(mgtest_types[0])))

#undef MGTEST_C
#undef MGTEST_F
#undef MGTEST_PAIR

/* The entry of dt (the first, for an alias), or NULL for a type not listed. */
__attribute__((unused)) static const mgtest_type_t *mgtest_type_of(MPI_Datatype dt)
{
    for (int i = 0; i < MGTEST_NTYPES; i++)
        if (mgtest_types[i].dt == dt)
            return &mgtest_types[i];
    return NULL;
}

#endif /* MGTEST_TYPES_H */
