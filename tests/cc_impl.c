/* tests/cc_impl.c - cc.h's implementation in a translation unit of its own.
   The tests and probes that use only the public API (LINKED in the Makefile)
   include cc.h for its declarations and link this object, built once per
   build directory, instead of compiling the implementation each: at -O2
   that is about 9 s of CPU per program on this project's VM. The other tests
   reach into the implementation's internals and define CC_IMPLEMENTATION
   themselves, as every example does. */
#define CC_IMPLEMENTATION
#include "cc.h"
