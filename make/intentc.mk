# intentc.mk - GNU Make rules that build Intent kernels with intentc.
#
# Use (see docs/build-systems.md):
#
#     INTENTC_OUTPUTS := kernels.so             # outputs whose depfiles Make should read
#     include $(shell intentc --make-dir)/intentc.mk
#
#     app: app.c kernels.so                     # kernels.so's rule also writes kernels.h
#     	$(CC) -I. -o $@ app.c ./kernels.so
#
# Pattern rules (every one also writes OUTPUT.d, the dependencies intentc saw):
#
#     %.so: %.intent     shared library, plus %.h and intent_runtime.h beside it
#     %.a:  %.intent     static archive (kernels + runtime), plus the header
#     %.o:  %.intent     relocatable object (kernels + runtime), plus the header
#     %.h:  %.intent     the header only
#
# Settings, global or per output (`kernels_arm.so: INTENTC_TARGET = aarch64-linux-gnu`):

INTENTC ?= intentc
INTENTC_TARGET ?= host
INTENTC_CPU ?= native
INTENTC_FLAGS ?=

# The full command of one build; $@ is the output and $< the .intent source.
INTENTC_BUILD = $(INTENTC) build "$<" -o "$@" --target $(INTENTC_TARGET) --cpu $(INTENTC_CPU) \
    --depfile "$@.d" $(INTENTC_FLAGS)

%.so: %.intent
	$(INTENTC_BUILD)

%.a: %.intent
	$(INTENTC_BUILD) --emit-header

%.o: %.intent
	$(INTENTC_BUILD) --emit-header

%.h: %.intent
	$(INTENTC_BUILD)

# The depfiles of earlier builds: each says `OUTPUT: SOURCE <intentc's runtime files>`.
# Reading them must not change the Makefile's default goal.
_intentc_default_goal := $(.DEFAULT_GOAL)
-include $(wildcard $(addsuffix .d,$(INTENTC_OUTPUTS)))
.DEFAULT_GOAL := $(_intentc_default_goal)
