// What fetch accepts as a body: the DOM library's name for it, which the
// generated fetch client casts to. Declared here so the package compiles on
// Node's types alone; no emitted declaration refers to it.
type BodyInit = ConstructorParameters<typeof Response>[0];
