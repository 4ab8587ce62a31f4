// Package diagnose explains a verify run for the engineer on call: it groups instances by the
// content they serve, attributes each group to the image that produced it (reading the
// manifest file out of images in the registry), and names the likely causes with the evidence
// they rest on and the actions that fix them (schema polygraph.diagnosis/v1).
package diagnose
