# lockcheck: `make run` for a default run, `make test` for the tests.
GO      ?= go
BIN     := bin/lockcheck
PKGS    := ./...
# Packages with concurrency run under the race detector.
RACE_PKGS := ./agent/... ./cli/... ./battery/... ./scenario/... ./docs/... ./kube/... ./history/... ./lockimpl/... ./workload/... ./nemesis/... ./checker/... ./cluster/... ./report/... ./cmd/... ./lockchecktest/... ./examples/...
# The fault table (nemesis's fault tests, about 13 minutes one after
# another) and the harness package's tests (about 11) run as two processes
# beside the rest.
FAULTS := ^(TestFault_|TestDocker_FaultTable$$)
REQUIRE := LOCKCHECK_REQUIRE_REDIS=1 LOCKCHECK_REQUIRE_CHROMIUM=1 LOCKCHECK_REQUIRE_PYREDIS=1

.PHONY: deps survey-deps build run test lint bench survey survey-demos survey-page clean

# The survey's libraries (docs/survey.md): Python's tooz, PHP's Symfony
# Lock, Laravel cache lock and malkusch/lock on phpredis, from Debian.
SURVEY_APT := python3-tooz php-cli php-redis php-symfony-lock php-illuminate-cache php-illuminate-redis php-malkusch-lock php-symfony-semaphore

deps: ## install redis-server, redis-sentinel, redis-tools, chromium (the report's browser test) and python3-redis (examples/adapters/redispy) when missing
	@if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v redis-benchmark >/dev/null && command -v chromium >/dev/null && /usr/bin/python3 -c 'import redis' 2>/dev/null; then \
		echo "deps: redis $$(redis-server --version | sed 's/.*v=\([0-9.]*\).*/\1/') and chromium present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel redis-tools chromium python3-redis >/dev/null && \
		echo "deps: installed redis $$(redis-server --version | sed 's/.*v=\([0-9.]*\).*/\1/'), chromium and python3-redis"; \
	else \
		echo "deps: missing: install them (e.g. sudo apt-get install redis-server redis-sentinel redis-tools chromium python3-redis)"; exit 2; \
	fi
	@# The distro's redis-server service is not ours; lockcheck starts its own.

build:
	$(GO) build -o $(BIN) ./cmd/lockcheck

run: deps build ## a ~20 s run of setnx against a local redis-server
	./$(BIN) run --lock setnx --clients 200 --keys 10 --duration 20s --ttl 500ms --hold 100ms --hold-dist exp

survey-deps: deps ## the survey's Python and PHP libraries, when missing
	@if /usr/bin/python3 -c 'import tooz' 2>/dev/null && php -r 'exit(class_exists("Redis") && is_file("/usr/share/php/Symfony/Component/Lock/autoload.php") && is_file("/usr/share/php/Symfony/Component/Semaphore/autoload.php") && is_file("/usr/share/php/Illuminate/Redis/autoload.php") && is_file("/usr/share/php/Malkusch/Lock/autoload.php") ? 0 : 1);' 2>/dev/null; then \
		echo "survey-deps: tooz, php-redis, Symfony Lock and Semaphore, Laravel's cache lock and malkusch/lock present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SURVEY_APT) >/dev/null && echo "survey-deps: installed $(SURVEY_APT)"; \
	else \
		echo "survey-deps: missing: install them (e.g. sudo apt-get install $(SURVEY_APT))"; exit 2; \
	fi

test: survey-deps ## the race detector everywhere, the harness's tests in two halves and the survey's adapters (each through one short run; go-zero's without the race detector, whose own breaker races) beside the rest; then the memory-budget test without it (its RSS bound means nothing under the race detector) and the shapes' oracle tests at their full count (10,000 histories a shape; 1,000 under the race detector, which slows a one-goroutine search tenfold)
	@log=$$(mktemp); ha=$$(mktemp); hb=$$(mktemp); \
	(cd survey && $(REQUIRE) $(GO) test -race -count=1 -timeout 20m ./... >"$$log" 2>&1 && \
	  LOCKCHECK_REQUIRE_REDIS=1 $(GO) test -count=1 -timeout 10m -run '^(TestGoAdapters_Contention|TestGoZero_BreakerColdStart)$$/^(go-zero|cold|warm)(#[0-9]+)?$$' ./golocks/ >>"$$log" 2>&1) & survey=$$!; \
	$(REQUIRE) $(GO) test -race -count=1 -timeout 40m -run '$(FAULTS)' ./nemesis/ >"$$ha" 2>&1 & harnessa=$$!; \
	$(REQUIRE) $(GO) test -race -count=1 -timeout 40m ./harness/ >"$$hb" 2>&1 & harnessb=$$!; \
	$(REQUIRE) $(GO) test -race -count=1 -timeout 40m -skip '$(FAULTS)' $(RACE_PKGS); main=$$?; \
	wait $$harnessa; harnessarc=$$?; wait $$harnessb; harnessbrc=$$?; \
	echo "the fault table, nemesis -run '$(FAULTS)':"; cat "$$ha"; echo "harness:"; cat "$$hb"; \
	wait $$survey; surveyrc=$$?; echo "survey module (cd survey && go test -race ./...):"; cat "$$log"; rm -f "$$log" "$$ha" "$$hb"; \
	[ $$main = 0 ] && [ $$harnessarc = 0 ] && [ $$harnessbrc = 0 ] && [ $$surveyrc = 0 ]
	$(GO) test -count=1 -run '^(TestBudget_UnknownWithinMemory|TestSemaphore_AgreesWithOracle|TestReadWrite_AgreesWithOracle|TestSemaphore_OnePermitIsTheMutex|TestReentrant_AgreesWithOracle)$$' ./checker/

survey: survey-deps ## the whole survey (about two hours): every library through verify with --seed 1, the passes again with --seed 2, the clock-skew sweep, the bench, each break's command run again and every demonstration (survey.Demos); what the page is written from is archived in survey/data, then docs/survey.md written from it
	cd survey && $(GO) build -o ../bin/lockcheck-survey ./cmd/lockcheck-survey && git describe --always --dirty >../bin/lockcheck-survey.rev && $(GO) run ./cmd/survey --bin ../bin/lockcheck-survey --out ../results/survey --reproduce --archive data --write ../docs/survey.md

survey-demos: survey-deps ## every demonstration of the survey (survey.Demos: each library alone, no lockcheck) run again, its result recorded in survey/data/demos, then docs/survey.md written again from survey/data
	cd survey && $(GO) run ./cmd/survey --no-run --demos --out data --write ../docs/survey.md

survey-page: ## docs/survey.md written again from survey/data, running nothing
	cd survey && $(GO) run ./cmd/survey --no-run --out data --write ../docs/survey.md

lint:
	$(GO) vet $(PKGS)
	cd survey && $(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: build
	$(GO) test -run XXX -bench . -benchmem -benchtime 1x ./history/ ./checker/ ./report/

clean:
	rm -rf bin
