# intentc.mk - GNU Make rules that build Intent kernels with intentc.
#
# Use (see docs/build-systems.md):
#
#     INTENTC_OUTPUTS := kernels.so             # outputs whose depfiles Make should read
#     include $(shell intentc --make-dir)/intentc.mk
#
#     app.o: app.c kernels.h                    # kernels.so's build also writes kernels.h
#     app: app.o kernels.so
#     	$(CC) -o $@ app.o ./kernels.so
#
# Pattern rules: one intentc run per library writes the library, OUTPUT.d (the dependencies
# intentc saw) and the header with intent_runtime.h beside it:
#
#     %.so: %.intent     shared library
#     %.a:  %.intent     static archive (kernels + runtime)
#     %.o:  %.intent     relocatable object (kernels + runtime)
#     %.h:  %.intent     the header alone, when no library of the same stem is built
#
# intentc rewrites a header only when its content changes, so an edit of the kernels that
# keeps their signatures rebuilds the library and relinks, but recompiles nothing that
# includes the header. The header's rule depends on the library (the first of .so, .a, .o
# that the Makefile names or that exists) and runs no intentc: it only rebuilds a header
# that was deleted.
#
# Settings, global or per output (`kernels_arm.so: INTENTC_TARGET = aarch64-linux-gnu`):

INTENTC ?= intentc
INTENTC_TARGET ?= host
INTENTC_CPU ?= native
INTENTC_FLAGS ?=
# The kernels' C symbols are $(INTENTC_PREFIX) + their names (intentc build --prefix), e.g.
# `stencil.so stencil.h: INTENTC_PREFIX = stencil_`; empty: the names themselves.
INTENTC_PREFIX ?=
INTENTC_PREFIX_FLAG = $(if $(INTENTC_PREFIX),--prefix $(INTENTC_PREFIX))
# Folders searched for imported modules after the importing file's own, in order (intentc -I),
# e.g. `INTENTC_INCLUDES = lib ../shared`. The depfile lists every imported file, so an edit of
# one rebuilds what imports it.
INTENTC_INCLUDES ?=
INTENTC_INCLUDE_FLAGS = $(foreach dir,$(INTENTC_INCLUDES),-I "$(dir)")

# The full command of one build; $@ is the output and $< the .intent source.
INTENTC_BUILD = $(INTENTC) build "$<" -o "$@" --target $(INTENTC_TARGET) --cpu $(INTENTC_CPU) \
    --depfile "$@.d" $(INTENTC_INCLUDE_FLAGS) $(INTENTC_PREFIX_FLAG) $(INTENTC_FLAGS)
# The header alone ($@), from the .intent source named second among the prerequisites.
INTENTC_HEADER = $(INTENTC) build "$(word 2,$^)" -o "$@" --target $(INTENTC_TARGET) --cpu $(INTENTC_CPU) \
    $(INTENTC_INCLUDE_FLAGS) $(INTENTC_PREFIX_FLAG) $(INTENTC_FLAGS)

%.so: %.intent
	$(INTENTC_BUILD) --emit-header

%.a: %.intent
	$(INTENTC_BUILD) --emit-header

%.o: %.intent
	$(INTENTC_BUILD) --emit-header

# Make checks the header's modification time again after these rules: an unchanged header
# leaves what includes it up to date.
%.h: %.so %.intent
	@test -f "$@" || $(INTENTC_HEADER)

%.h: %.a %.intent
	@test -f "$@" || $(INTENTC_HEADER)

%.h: %.o %.intent
	@test -f "$@" || $(INTENTC_HEADER)

%.h: %.intent
	$(INTENTC) build "$<" -o "$@" --target $(INTENTC_TARGET) --cpu $(INTENTC_CPU) $(INTENTC_INCLUDE_FLAGS) \
	    $(INTENTC_PREFIX_FLAG) $(INTENTC_FLAGS)

# The depfiles of earlier builds: each says `OUTPUT: SOURCE <imported modules> <intentc's runtime files>`.
# Reading them must not change the Makefile's default goal.
_intentc_default_goal := $(.DEFAULT_GOAL)
-include $(wildcard $(addsuffix .d,$(INTENTC_OUTPUTS)))
.DEFAULT_GOAL := $(_intentc_default_goal)
