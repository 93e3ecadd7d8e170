package platform

// WindowsBuild is the major.minor.build a Windows image needs its host to have,
// the value of the node label node.kubernetes.io/windows-build; "" for other
// operating systems and for Windows images that name no os.version.
func (p Platform) WindowsBuild() string {
	if p.OS != "windows" {
		return ""
	}
	return windowsBuild(p.OSVersion)
}
