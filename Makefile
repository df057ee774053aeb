# herald — build, test, run, bench. `make help` lists the targets.
#
# Dependencies are Debian packages found with pkg-config; `make deps` (run by
# `make test` and `make run`) installs any that are missing.

CC      ?= cc
BUILD   ?= build
PKGS    := rocksdb hiredis libmicrohttpd jansson libcrypto libxxhash libzstd
WARN    := -Wall -Wextra -Wstrict-prototypes -Wshadow -Wno-unused-parameter
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE $(WARN) -Isrc -MMD -MP
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
DEP_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
# The release binaries allocate with jemalloc, as RocksDB recommends: glibc's
# malloc was a large share of the server's CPU on a timeline page (RocksDB's
# iterators and values, the answer's buffers), and jemalloc's thread caches
# take most of that off (docs/DESIGN.md, "Measured decisions"). The sanitizer
# builds keep the allocator AddressSanitizer brings.
REL_LIBS   = $(DEP_LIBS) $(shell pkg-config --libs jemalloc 2>/dev/null)

LIB_SRC  := $(sort $(wildcard src/common/*.c src/store/*.c src/store/rocks/*.c src/store/redis/*.c src/http/*.c \
                               src/core/*.c src/api/*.c src/load/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
# tests/unit/ mirrors src/; its shared helpers (support.h, fault_store.h) sit at
# its top, found through -Itests/unit.
UNIT_SRC := $(sort $(shell find tests/unit -name '*.c'))

# Unit tests and the server the end-to-end tests run are built with
# AddressSanitizer and UndefinedBehaviorSanitizer, in their own tree.
SAN      := $(BUILD)/san
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_OBJ  := $(LIB_SRC:%.c=$(SAN)/%.o)
UNIT_OBJ := $(UNIT_SRC:%.c=$(SAN)/%.o)

PYTHON ?= /usr/bin/python3

.PHONY: all deps run test unit e2e bench clean help format

all: $(BUILD)/herald

help:
	@echo "make            build build/herald"
	@echo "make run        install what is missing, build, load a demo dataset the first time, serve on 127.0.0.1:8080 (rocksdb:./data)"
	@echo "make test       install what is missing, build, run unit + end-to-end tests on RocksDB and Redis Cluster"
	@echo "make bench      benchmarks (see BENCHMARKS.md)"
	@echo "make deps       install the Debian packages herald needs"

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEP_CFLAGS) -c $< -o $@

# The code below main.c is an archive, so that a test binary links only the
# modules it uses.
$(BUILD)/libherald.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/herald: $(BUILD)/src/main.o $(BUILD)/libherald.a
	$(CC) $(CFLAGS) -o $@ $^ $(REL_LIBS)

# The stories benchmark's loader (bench/stories.sh builds and runs it): main and
# the export, the dataset's model and writing threads, the queries.
STORIES_LOAD_OBJ := $(addprefix $(BUILD)/bench/,stories_load.o stories_write.o stories_query.o)
$(BUILD)/stories_load: $(STORIES_LOAD_OBJ) $(BUILD)/libherald.a
	$(CC) $(CFLAGS) -o $@ $^ $(REL_LIBS)

# The social-reading benchmark's loader (bench/reading.sh builds and runs it).
$(BUILD)/reading_load: $(BUILD)/bench/reading_load.o $(BUILD)/libherald.a
	$(CC) $(CFLAGS) -o $@ $^ $(REL_LIBS)

# Micro-benchmarks of store primitives (bench/micro/store_micro.c says what each measures).
$(BUILD)/store_micro: $(BUILD)/bench/micro/store_micro.o $(BUILD)/libherald.a
	$(CC) $(CFLAGS) -o $@ $^ $(REL_LIBS)

# The ceiling of a fan-out tier that ingests sorted files (RocksDB's C API
# directly; bench/micro/ingest_micro.c says what it measures).
$(BUILD)/ingest_micro: $(BUILD)/bench/micro/ingest_micro.o
	$(CC) $(CFLAGS) -o $@ $^ $(REL_LIBS)

$(SAN)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2,$(CFLAGS)) $(SANFLAGS) $(DEP_CFLAGS) -Itests/unit -c $< -o $@

$(SAN)/libherald.a: $(SAN_OBJ)
	rm -f $@
	ar rcs $@ $^

$(SAN)/herald: $(SAN)/src/main.o $(SAN)/libherald.a
	$(CC) $(SANFLAGS) -o $@ $^ $(DEP_LIBS)

$(SAN)/unit: $(UNIT_OBJ) $(SAN)/libherald.a
	$(CC) $(SANFLAGS) -o $@ $^ $(DEP_LIBS) -lcriterion

# The first `make run` loads a small demo social graph into ./data (users
# u0..u1999 following ~450 each, groups, activities); later runs reuse it.
DEMO_USERS ?= 2000
run: deps
	@$(MAKE) --no-print-directory $(BUILD)/herald
	@[ -n "$(ARGS)" ] || [ -d data ] || $(BUILD)/herald load --users $(DEMO_USERS) --store rocksdb:./data
	$(BUILD)/herald serve $(ARGS)

# Unit tests need a Redis Cluster for the store conformance suite; the
# end-to-end tests start the server once per backend. scripts/test.sh starts
# a throwaway 3-master cluster on loopback ports and stops it afterwards.
test: deps
	@$(MAKE) --no-print-directory $(BUILD)/herald $(SAN)/herald $(SAN)/unit
	@scripts/test.sh

unit: $(SAN)/unit
	$(SAN)/unit

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/herald
	@bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
