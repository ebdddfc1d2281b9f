/*
 * <sys/exs.h>: the Extended Sockets API under the name its programs
 * include it by (the ES-API, Issue 1.0, of the Open Group's Interconnect
 * Software Consortium); the same declarations as <exs.h>. A program that
 * includes this and links with -lexs (pkg-config exs) needs nothing else.
 */
#ifndef UWARP_SYS_EXS_H
#define UWARP_SYS_EXS_H

#include <exs.h>

#endif
