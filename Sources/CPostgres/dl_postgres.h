// libpq for the shared queue (--queue). Swift calls libpq directly; this
// header only gathers what it includes.
#ifndef DL_POSTGRES_H
#define DL_POSTGRES_H
#include <libpq-fe.h>
#endif
