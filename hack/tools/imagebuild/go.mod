// Assembles OCI image tarballs from files this project builds (no registry, no container engine).
module github.com/nsclaim/nsclaim-operator/hack/tools/imagebuild

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
