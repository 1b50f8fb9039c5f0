package helmtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile keeps deploy/Dockerfile and the chart in agreement: the
// image runs the binary as the uid/gid the pods pin, from a distroless
// static base, built statically with the version stamped.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	stages := regexp.MustCompile(`(?m)^FROM\s+(?:--platform=\S+\s+)?(\S+)`).FindAllStringSubmatch(text, -1)
	if len(stages) != 2 {
		t.Fatalf("want a builder and a runtime stage, got %v", stages)
	}
	if !strings.HasPrefix(stages[0][1], "golang:1.26") {
		t.Errorf("builder %s, want golang:1.26", stages[0][1])
	}
	if stages[1][1] != "gcr.io/distroless/static:nonroot" {
		t.Errorf("runtime %s, want gcr.io/distroless/static:nonroot", stages[1][1])
	}
	runtime := text[strings.LastIndex(text, "\nFROM "):]
	for _, want := range []string{
		"USER 65532:65532",
		`ENTRYPOINT ["/brainstem"]`,
		"COPY --from=build /brainstem /brainstem",
	} {
		if !strings.Contains(runtime, want) {
			t.Errorf("runtime stage lacks %q", want)
		}
	}
	build := regexp.MustCompile(`CGO_ENABLED=0[^\n]*\\\n\s*go build (.*)`).FindStringSubmatch(text)
	if build == nil {
		t.Fatal("no CGO_ENABLED=0 go build line")
	}
	for _, want := range []string{"-trimpath", `-X main.version=${VERSION}`, "-o /brainstem", "./cmd/brainstem"} {
		if !strings.Contains(build[1], want) {
			t.Errorf("go build line lacks %q: %s", want, build[1])
		}
	}
	if wantPodSecurity["runAsUser"] != 65532 || wantContainerSecurity["runAsGroup"] != 65532 {
		t.Error("the chart's pinned uid/gid no longer match the image's USER 65532:65532")
	}
}
