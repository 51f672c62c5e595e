// Package deploy holds the tests of toolrouter's deployment files: the Compose file
// (compose.yaml), the Helm chart (helm/toolrouter), the systemd unit (systemd/) and the container
// image (image/, assembled without a container engine). It is a module of its own so that Helm,
// the Kubernetes API types, compose-go and go-containerregistry stay out of toolrouter's go.mod.
package deploy
