// The menu-bar icons. The PNGs are rendered from the SVGs beside them by
// icons/render.sh; icons/app.png is the bundle's icon and is not embedded.

package assets

import _ "embed"

var (
	//go:embed icons/menu-template.png
	menuTemplate []byte
	//go:embed icons/menu-template-busy.png
	menuTemplateBusy []byte
	//go:embed icons/tray.png
	trayIcon []byte
	//go:embed icons/tray-busy.png
	trayIconBusy []byte
)

// MenuIcon returns the menu-bar icon, idle or busy (generating, loading or
// pulling): template is a macOS template image (black and alpha, 32 pixels
// for 16 points, which the menu bar tints), and regular is the colored icon
// Linux panels show.
func MenuIcon(busy bool) (template, regular []byte) {
	if busy {
		return menuTemplateBusy, trayIconBusy
	}
	return menuTemplate, trayIcon
}
